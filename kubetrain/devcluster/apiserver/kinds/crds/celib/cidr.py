"""The Kubernetes CEL CIDR library (k8s.io/apiserver pkg/cel/library/cidr.go) over a port of
Go's `netip.ParsePrefix`: `cidr()`, `isCIDR`, `containsIP`, `containsCIDR` (each with a string or
a parsed argument), `ip()`, `prefixLength`, `masked`, and `string()` of a CIDR.

```
cidr('192.168.0.0/24').containsIP('192.168.0.1')       // true
cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')   // true (the address is kept as given)
cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')         // true
cidr('1.2.3.4')   // error "network address parse error during conversion from string: network
                  //        address parse error during conversion from string: netip.ParsePrefix(
                  //        \\"1.2.3.4\\"): no '/'" (the prefix twice, as upstream wraps it twice)
```
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.kinds.crds.celib import ip
from kubetrain.devcluster.apiserver.kinds.crds.celib.values import error, no_overload
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote

_CONTEXT = "network address parse error during conversion from string"


@dataclass(frozen=True)
class CIDR:
    """The CEL `net.CIDR` type (a netip.Prefix: the address as written, and the bits)."""

    addr: ip.Address
    bits: int

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"

    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.addr}/{self.bits}", strict=False)


def parse_prefix(s: str) -> CIDR:
    """netip `ParsePrefix` then cidr.go `parseCIDR` (no IPv4-mapped IPv6)."""

    def fail(msg: str) -> ip.AddrError:
        return ip.AddrError(f"{_CONTEXT}: netip.ParsePrefix({go_quote(s)}): {msg}")

    slash = s.rfind("/")
    if slash < 0:
        raise fail("no '/'")
    try:
        addr, zoned = ip.parse_addr(s[:slash])
    except ip.AddrError as err:
        raise fail(str(err)) from None
    if zoned:
        raise fail("IPv6 zones cannot be present in a prefix")
    bits_text = s[slash + 1 :]
    digits = bits_text.isascii() and bits_text.isdigit()
    if (len(bits_text) > 1 and not "1" <= bits_text[0] <= "9") or not digits:
        raise fail(f"bad bits after slash: {go_quote(bits_text)}")
    bits = int(bits_text)
    if bits > addr.max_prefixlen:
        raise fail("prefix length out of range")
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ip.AddrError(f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return CIDR(addr, bits)


def to_cidr(s: Any) -> Any:
    if not isinstance(s, str):
        return no_overload(s)
    try:
        return parse_prefix(str(s))
    except ip.AddrError as err:
        return error(f"{_CONTEXT}: {err}")


def is_cidr(s: Any) -> Any:
    if not isinstance(s, str):
        return no_overload(s)
    try:
        parse_prefix(str(s))
    except ip.AddrError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def contains_ip(c: Any, other: Any) -> Any:
    """`cidrContainsIP` (a string argument parsed first; one that does not parse is answered
    `no such overload`, as upstream's check names the CIDR, not the error)."""
    if isinstance(other, str):
        other = ip.to_ip(other)
    if not isinstance(c, CIDR) or not isinstance(other, ip.IP):
        return no_overload(c)
    return ct.BoolType(other.addr.version == c.addr.version and other.addr in c.network())


def contains_cidr(c: Any, other: Any) -> Any:
    """`cidrContainsCIDR` (a string argument that does not parse is its parse error)."""
    if not isinstance(c, CIDR):
        return no_overload(c)
    if isinstance(other, str):
        other = to_cidr(other)
        if not isinstance(other, CIDR):
            return other
    if not isinstance(other, CIDR):
        return no_overload(other)
    if c.addr.version != other.addr.version or c.bits > other.bits:
        return ct.BoolType(False)
    return ct.BoolType(other.network().network_address in c.network())


def cidr_ip(v: Any) -> Any:
    """`ip()`: of a string, ip.go's; of a CIDR, its address as written (`cidrToIP`)."""
    return ip.IP(v.addr) if isinstance(v, CIDR) else ip.to_ip(v)


def _on_cidr(get: Callable[[CIDR], Any]) -> Callable[[Any], Any]:
    def call(v: Any) -> Any:
        if not isinstance(v, CIDR):
            return no_overload(v)
        return get(v)

    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "cidr": to_cidr,
    "isCIDR": is_cidr,
    "containsIP": contains_ip,
    "containsCIDR": contains_cidr,
    "prefixLength": _on_cidr(lambda c: ct.IntType(c.bits)),
    "ip": cidr_ip,
    "masked": _on_cidr(lambda c: CIDR(c.network().network_address, c.bits)),
}
