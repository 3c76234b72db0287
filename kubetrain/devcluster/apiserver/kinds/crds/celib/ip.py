"""The Kubernetes CEL IP library (k8s.io/apiserver pkg/cel/library/ip.go) over a port of Go's
`netip.ParseAddr`: `ip()`, `isIP`, `ip.isCanonical`, `family`, `isUnspecified`, `isLoopback`,
`isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast`, and `string()` of an IP.

```
ip('192.168.0.1').family()          // 4      ip.isCanonical('2001:db8::0:1')  // false
ip('fe80::1').isLinkLocalUnicast()  // true   isIP('1.2.3.04')              // false (leading zero)
ip('::ffff:1.2.3.4')   // error "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"
```
Syntax errors are worded as netip words them (`ParseAddr("1.2.3.256"): IPv4 field has value
>255`, `ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit (at
":68")`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.kinds.crds.celib.values import error, no_overload
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class IP:
    """The CEL `net.IP` type (a netip.Addr without a zone)."""

    addr: Address

    def __str__(self) -> str:
        """`Addr.String()`: dotted IPv4, RFC 5952 IPv6."""
        return str(self.addr)


class AddrError(ValueError):
    pass


def _ipv4_error(s: str) -> str | None:
    """netip `parseIPv4Fields`' message, or None for a valid dotted quad."""
    val, pos, digits = 0, 0, 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if digits == 1 and val == 0:
                return "IPv4 field has octet with leading zero"
            val, digits = val * 10 + int(c), digits + 1
            if val > 255:
                return "IPv4 field has value >255"
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                return f"IPv4 field must have at least one digit (at {go_quote(s[i:])})"
            if pos == 3:
                return "IPv4 address too long"
            pos, val, digits = pos + 1, 0, 0
        else:
            return f"unexpected character (at {go_quote(s[i:])})"
    return "IPv4 address too short" if pos < 3 else None


def parse_addr(s: str) -> tuple[Address, bool]:
    """`netip.ParseAddr`: the address and whether it had a zone, or raise with netip's text."""
    kind = next((c for c in s if c in ".:%"), "")
    if kind == ".":
        problem = _ipv4_error(s)
        if problem is not None:
            raise AddrError(f"ParseAddr({go_quote(s)}): {problem}")
        return ipaddress.IPv4Address(s), False
    if kind == "%":
        raise AddrError(f"ParseAddr({go_quote(s)}): missing IPv6 address")
    if kind == ":":
        return _parse_ipv6(s)
    raise AddrError(f"ParseAddr({go_quote(s)}): unable to parse IP")


def _parse_ipv6(text: str) -> tuple[Address, bool]:
    """netip `parseIPv6`: hex groups of at most four digits, one `::`, an embedded IPv4 in
    the last two groups, a zone after `%`."""

    def fail(msg: str, at: str | None = None) -> AddrError:
        where = f" (at {go_quote(at)})" if at else ""
        return AddrError(f"ParseAddr({go_quote(text)}): {msg}{where}")

    s, sep, zone = text.partition("%")
    if sep and not zone:
        raise fail("zone must be a non-empty string")
    groups: list[int] = []  # 16-bit groups
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return ipaddress.IPv6Address(0), bool(sep)
    while len(groups) < 8:
        off, acc = 0, 0
        while off < len(s) and s[off] in "0123456789abcdefABCDEF":
            acc = acc * 16 + int(s[off], 16)
            if off > 3:
                raise fail("each group must have 4 or less digits", s)
            off += 1
        if off == 0:
            raise fail("each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and len(groups) != 6:
                raise fail("embedded IPv4 address must replace the final 2 fields of the address", s)
            if len(groups) > 6:
                raise fail("too many hex fields to fit an embedded IPv4 at the end of the address", s)
            problem = _ipv4_error(s)
            if problem is not None:
                raise fail(problem)
            v4 = int(ipaddress.IPv4Address(s))
            groups += [v4 >> 16, v4 & 0xFFFF]
            s = ""
            break
        groups.append(acc)
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise fail("unexpected character, want colon", s)
        if len(s) == 1:
            raise fail("colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise fail("multiple :: in address", s)
            ellipsis, s = len(groups), s[1:]
            if not s:
                break
    if s:
        raise fail("trailing garbage after address", s)
    if len(groups) < 8:
        if ellipsis < 0:
            raise fail("address string too short")
        groups = groups[:ellipsis] + [0] * (8 - len(groups)) + groups[ellipsis:]
    elif ellipsis >= 0:
        raise fail("the :: must expand to at least one field of zeros")
    value = 0
    for group in groups:
        value = value << 16 | group
    return ipaddress.IPv6Address(value), bool(sep)


def parse_ip(s: str) -> Address:
    """ip.go `parseIPAddr`: no zone, no IPv4-mapped IPv6."""
    try:
        addr, zoned = parse_addr(s)
    except AddrError as err:
        context = f"IP Address {go_quote(s)} parse error during conversion from string"
        raise AddrError(f"{context}: {err}") from None
    if zoned:
        raise AddrError(f"IP address {go_quote(s)} with zone value is not allowed")
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise AddrError(f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return addr


def to_ip(s: Any) -> Any:
    if isinstance(s, str):
        try:
            return IP(parse_ip(str(s)))
        except AddrError as err:
            return error(str(err))
    return no_overload(s)


def is_ip(s: Any) -> Any:
    if not isinstance(s, str):
        return no_overload(s)
    try:
        parse_ip(str(s))
    except AddrError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def is_canonical(s: Any) -> Any:
    if not isinstance(s, str):
        return no_overload(s)
    try:
        return ct.BoolType(str(parse_ip(str(s))) == s)
    except AddrError as err:
        return error(str(err))


def _link_local_multicast(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("224.0.0.0/24")
    return a.packed[0] == 0xFF and a.packed[1] & 0x0F == 0x02


def _global_unicast(a: Address) -> bool:
    """netip `IsGlobalUnicast` (as package net: private and ULA addresses count)."""
    if isinstance(a, ipaddress.IPv4Address) and a in (
        ipaddress.IPv4Address("0.0.0.0"),
        ipaddress.IPv4Address("255.255.255.255"),
    ):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or _link_local_unicast(a))


def _link_local_unicast(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("169.254.0.0/16")
    return a in ipaddress.IPv6Network("fe80::/10")


def _loopback(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a.packed[0] == 127
    return a == ipaddress.IPv6Address("::1")


def _on_ip(get: Callable[[Address], Any]) -> Callable[[Any], Any]:
    def call(v: Any) -> Any:
        if not isinstance(v, IP):
            return no_overload(v)
        return get(v.addr)

    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ip": to_ip,
    "isIP": is_ip,
    # `ip.isCanonical(s)`: celpy reads it as a method of the identifier `ip`, i.e. the function
    "isCanonical": lambda namespace, s: is_canonical(s) if callable(namespace) else no_overload(namespace),
    "family": _on_ip(lambda a: ct.IntType(a.version)),
    "isUnspecified": _on_ip(lambda a: ct.BoolType(a.is_unspecified)),
    "isLoopback": _on_ip(lambda a: ct.BoolType(_loopback(a))),
    "isLinkLocalMulticast": _on_ip(lambda a: ct.BoolType(_link_local_multicast(a))),
    "isLinkLocalUnicast": _on_ip(lambda a: ct.BoolType(_link_local_unicast(a))),
    "isGlobalUnicast": _on_ip(lambda a: ct.BoolType(_global_unicast(a))),
}
