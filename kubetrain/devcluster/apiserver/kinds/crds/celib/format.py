"""The Kubernetes CEL format library (k8s.io/apiserver pkg/cel/library/format.go):
`format.<name>()` and `<format>.validate(s)`, which is `optional.none()` for a valid string, else
an optional list of apimachinery's messages.

```
format.dns1123Label().validate('my-name')    // optional.none()
format.dns1123Label().validate('My_Name').value()[0]  // "a lowercase RFC 1123 label must ..."
format.uuid().validate('x').value()          // ["does not match the UUID format"]
```
Formats: dns1123Label, dns1123Subdomain, dns1035Label and their `Prefix` forms (a trailing `-`
allowed, apimachinery `maskTrailingDash`), qualifiedName, labelValue, uri (Go's
`ParseRequestURI` error), uuid, byte (standard base64), date (`2006-01-02`). Not covered:
`format.datetime()` and `format.named(name)`, whose rules are skipped.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import celpy.celtypes as ct

from kubetrain.api.dnsnames import DNS1123_LABEL, DNS1123_SUBDOMAIN
from kubetrain.devcluster.apiserver.kinds import objectmeta
from kubetrain.devcluster.apiserver.kinds.crds.celib import optionals, urls
from kubetrain.devcluster.apiserver.kinds.crds.celib.values import no_overload
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")


@dataclass(frozen=True)
class Format:
    """The CEL `kubernetes.NamedFormat` type."""

    name: str
    check: Callable[[str], list[str]]


class Namespace:
    """The value of the identifier `format` in a rule, so `format.x()` is a method call on it."""


NAMESPACE = Namespace()


def _mask_trailing_dash(name: str) -> str:
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def dns1123_label(value: str) -> list[str]:
    """apimachinery `IsDNS1123Label`."""
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not DNS1123_LABEL.fullmatch(value):
        out.append(
            "must not contain dots" if DNS1123_SUBDOMAIN.fullmatch(value) else objectmeta.DNS1123_LABEL_ERROR
        )
    return out


def _uri(value: str) -> list[str]:
    try:
        urls.parse(value, True)
    except urls.URLError as err:
        return [f"parse {go_quote(value)}: {err}"]
    return []


def _byte(value: str) -> list[str]:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date(value: str) -> list[str]:
    """strfmt `IsDate`: `time.Parse("2006-01-02", s)`."""
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", value)
    if m is None:
        return ["invalid date"]
    year, month, day = (int(g) for g in m.groups())
    if not 1 <= month <= 12 or day < 1 or day > _days(year, month):
        return ["invalid date"]
    return []


def _days(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


FORMATS: dict[str, Format] = {
    "dns1123Label": Format("DNS1123Label", dns1123_label),
    "dns1123Subdomain": Format("DNS1123Subdomain", objectmeta.dns1123_subdomain_errors),
    "dns1035Label": Format("DNS1035Label", objectmeta.dns1035_label_errors),
    "qualifiedName": Format("QualifiedName", objectmeta.qualified_name_problems),
    "dns1123LabelPrefix": Format("DNS1123LabelPrefix", lambda s: dns1123_label(_mask_trailing_dash(s))),
    "dns1123SubdomainPrefix": Format(
        "DNS1123SubdomainPrefix", lambda s: objectmeta.dns1123_subdomain_errors(_mask_trailing_dash(s))
    ),
    "dns1035LabelPrefix": Format(
        "DNS1035LabelPrefix", lambda s: objectmeta.dns1035_label_errors(_mask_trailing_dash(s))
    ),
    "labelValue": Format("LabelValue", objectmeta.label_value_problems),
    "uri": Format("URI", _uri),
    "uuid": Format("uuid", lambda s: [] if _UUID.fullmatch(s) else ["does not match the UUID format"]),
    "byte": Format("byte", _byte),
    "date": Format("date", _date),
}


def validate(f: Any, value: Any) -> Any:
    """`formatValidate`."""
    if not isinstance(f, Format) or not isinstance(value, str):
        return no_overload(f)
    problems = f.check(str(value))
    if not problems:
        return optionals.NONE
    return optionals.of(ct.ListType([ct.StringType(p) for p in problems]))


def _constant(name: str) -> Callable[[Any], Any]:
    def get(namespace: Any) -> Any:
        if namespace is not NAMESPACE:
            return no_overload(namespace)
        return FORMATS[name]

    return get


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "validate": validate,
    **{name: _constant(name) for name in FORMATS},
}
