"""The Kubernetes CEL URL library (k8s.io/apiserver pkg/cel/library/urls.go): `url()`, `isURL`
and the URL accessors, over a port of Go's net/url parsing (`ParseRequestURI` to accept, `Parse`
for the parts).

```
url('https://example.com:80/a%20b?x=1&x=2').getPort()   // "80"
isURL('/absolute/path')   // true      isURL('relative')  // false
url('https://[::1]:80/').getHostname()                   // "::1"
```
A string `url()` refuses is the error `URL parse error during conversion from string: parse
"<s>": <reason>` with Go's reasons (`invalid URI for request`, `invalid port ":x" after host`,
`invalid URL escape "%zz"`, `missing protocol scheme`, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.kinds.crds.celib.values import error, no_overload
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote

_UNRESERVED = re.compile(r"[A-Za-z0-9\-_.~]")


class URLError(ValueError):
    pass


@dataclass(frozen=True)
class URL:
    """A parsed URL (net/url `URL`): the CEL `URL` type."""

    scheme: str
    opaque: str
    host: str
    path: str
    raw_path: str
    raw_query: str


def _should_escape(c: str, mode: str) -> bool:
    """net/url `shouldEscape` for the path and host modes."""
    if _UNRESERVED.fullmatch(c):
        return False
    if mode == "host" and c in "!$&'()*+,;=:[]<>\"":
        return False
    return not (mode == "path" and c in "$&+,/:;=@")


def _unescape(s: str, mode: str) -> str:
    i = 0
    while i < len(s):
        c = s[i]
        if c == "%":
            esc = s[i : i + 3]
            if len(esc) < 3 or not all(x in "0123456789abcdefABCDEF" for x in esc[1:]):
                raise URLError(f"invalid URL escape {go_quote(esc)}")
            if mode == "host" and int(esc[1], 16) < 8 and esc != "%25":  # only non-ASCII, or %25
                raise URLError(f"invalid URL escape {go_quote(esc)}")
            i += 3
            continue
        if mode == "host" and c < "\x80" and _should_escape(c, "host"):
            raise URLError(f"invalid character {go_quote(c)} in host name")
        i += 1
    return unquote_to_bytes(s).decode("utf-8", "replace")


def _scheme(raw: str) -> tuple[str, str]:
    for i, c in enumerate(raw):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                return "", raw
            continue
        if c == ":":
            if i == 0:
                raise URLError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw
    return "", raw


def _valid_port(colon_port: str) -> bool:
    return colon_port == "" or (colon_port[0] == ":" and all("0" <= c <= "9" for c in colon_port[1:]))


def _host(authority: str) -> str:
    at = authority.rfind("@")
    host = authority[at + 1 :]
    if host.startswith("["):
        end = host.rfind("]")
        if end < 0:
            raise URLError("missing ']' in host")
        if not _valid_port(host[end + 1 :]):
            raise URLError(f"invalid port {go_quote(host[end + 1 :])} after host")
    elif (colon := host.rfind(":")) != -1 and not _valid_port(host[colon:]):
        raise URLError(f"invalid port {go_quote(host[colon:])} after host")
    if at >= 0 and not all(c.isalnum() or c in "-._:~!$&'()*+,;=%@" for c in authority[:at]):
        raise URLError("net/url: invalid userinfo")
    return _unescape(host, "host")


def parse(raw: str, via_request: bool) -> URL:
    """net/url `parse` (the fragment already cut off)."""
    if any(ord(c) < 0x20 or c == "\x7f" for c in raw):
        raise URLError("net/url: invalid control character in URL")
    if raw == "" and via_request:
        raise URLError("empty url")
    if raw == "*":
        return URL("", "", "", "*", "", "")
    scheme, rest = _scheme(raw)
    scheme = scheme.lower()
    if rest.endswith("?") and rest.count("?") == 1:
        rest, query = rest[:-1], ""
    else:
        rest, _, query = rest.partition("?")
    if not rest.startswith("/"):
        if scheme:
            return URL(scheme, rest, "", "", "", query)
        if via_request:
            raise URLError("invalid URI for request")
        if ":" in rest.partition("/")[0]:
            raise URLError("first path segment in URL cannot contain colon")
    host = ""
    if (scheme or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        host, rest = _host(authority), slash + tail
    path = _unescape(rest, "path")
    return URL(scheme, "", host, path, rest, query)


def _error(s: str, err: URLError) -> Any:
    return error(f"URL parse error during conversion from string: parse {go_quote(s)}: {err}")


def to_url(s: Any) -> Any:
    if not isinstance(s, str):
        return no_overload(s)
    try:
        parse(str(s), True)
        return parse(str(s).partition("#")[0], False)
    except URLError as err:
        return _error(str(s), err)


def is_url(s: Any) -> Any:
    if not isinstance(s, str):
        return no_overload(s)
    try:
        parse(str(s), True)
    except URLError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _split_host_port(host: str) -> tuple[str, str]:
    """net/url `splitHostPort`."""
    port = ""
    colon = host.rfind(":")
    if colon != -1 and _valid_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def _valid_encoded(s: str) -> bool:
    """net/url `validEncoded` for a path."""
    return all(c in "!$&'()*+,;=:@[]%" or not _should_escape(c, "path") for c in s)


def escaped_path(u: URL) -> str:
    """`URL.EscapedPath`: the path as written where that is a valid encoding, else re-escaped."""
    if u.raw_path and _valid_encoded(u.raw_path):
        return u.raw_path
    if u.path == "*":
        return "*"
    return "".join(
        "".join(f"%{b:02X}" for b in c.encode()) if _should_escape(c, "path") else c for c in u.path
    )


def query(u: URL) -> dict[str, list[str]]:
    """`URL.Query` (`ParseQuery`, pairs that do not decode or hold a `;` left out)."""
    out: dict[str, list[str]] = {}
    for pair in u.raw_query.split("&"):
        if pair == "" or ";" in pair:
            continue
        key, _, value = pair.partition("=")
        try:
            k, v = _query_unescape(key), _query_unescape(value)
        except URLError:
            continue
        out.setdefault(k, []).append(v)
    return out


def _query_unescape(s: str) -> str:
    return _unescape(s.replace("+", " "), "query")


def _accessor(get: Callable[[URL], Any]) -> Callable[[Any], Any]:
    def call(u: Any) -> Any:
        if not isinstance(u, URL):
            return no_overload(u)
        return get(u)

    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "url": to_url,
    "isURL": is_url,
    "getScheme": _accessor(lambda u: ct.StringType(u.scheme)),
    "getHost": _accessor(lambda u: ct.StringType(u.host)),
    "getHostname": _accessor(lambda u: ct.StringType(_split_host_port(u.host)[0])),
    "getPort": _accessor(lambda u: ct.StringType(_split_host_port(u.host)[1])),
    "getEscapedPath": _accessor(lambda u: ct.StringType(escaped_path(u))),
    "getQuery": _accessor(
        lambda u: ct.MapType(
            {ct.StringType(k): ct.ListType([ct.StringType(x) for x in v]) for k, v in query(u).items()}
        )
    ),
}
