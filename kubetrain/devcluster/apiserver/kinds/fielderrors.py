"""apimachinery's `field.Error` constructors as `errors.Cause`s, worded as `ErrorBody()` words them.

`required(path, detail)` → `Required value: detail`; `invalid(path, value, detail)` →
`Invalid value: "value": detail` (strings quoted with Go's %q, numbers and booleans plain, and —
since apimachinery 0.34, Kubernetes 1.34 — anything else as Go's `json.Marshal` writes it: `null`,
`["a","b"]`, `{"name":"x"}`, keys sorted, no spaces, `<`, `>` and `&` escaped); `forbidden` →
`Forbidden: detail`; `not_supported` → `Unsupported value: "x": supported values: "a", "b"`;
`duplicate` → `Duplicate value: "x"`. Values of Go struct types that devcluster does not hold as
JSON are given as `Go(text)`, shown verbatim.

The messages of apimachinery's `validation.IsDNS1035Label` / `IsDNS1123Subdomain` are objectmeta.py's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.objectmeta import (  # apimachinery's DNS name checks, re-exported
    DNS1035_ERROR as DNS1035_ERROR,
)
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    DNS1123_SUBDOMAIN_ERROR as DNS1123_SUBDOMAIN_ERROR,
)
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    dns1035_label_errors as dns1035_label_errors,
)
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    dns1123_subdomain_errors as dns1123_subdomain_errors,
)


@dataclass(frozen=True)
class Go:
    """A value shown verbatim (a Go struct's %#v, abbreviated)."""

    text: str


def mapping(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else empty (a malformed part validates as absent)."""
    return value if isinstance(value, dict) else {}


def dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The (index, item) pairs of a JSON list whose items are objects (a malformed item, or a
    value that is no list, validates as absent)."""
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []


def go_quote(s: str) -> str:
    """Go's %q for the strings that occur in API objects (JSON escaping agrees for them)."""
    return json.dumps(s, ensure_ascii=False)


def go_value(value: Any) -> str:
    """How `field.Error.ErrorBody` prints a bad value (apimachinery 0.34+): int64, float64 and bool
    with %v, a string with %q, anything else as its JSON."""
    if isinstance(value, Go):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return go_json(value)


def go_json(value: Any) -> str:
    """Go's `json.Marshal` of an unstructured value: map keys sorted, no spaces, integral numbers
    without a fraction, HTML-significant characters and the line separators escaped."""
    text = json.dumps(_integral(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    for char, escaped in _GO_JSON_ESCAPES:
        text = text.replace(char, escaped)
    return text


_GO_JSON_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _with(body: str, detail: str) -> str:
    return f"{body}: {detail}" if detail else body


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", _with("Required value", detail), path)


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    return Cause("FieldValueInvalid", _with(f"Invalid value: {go_value(value)}", detail), path)


def forbidden(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueForbidden", _with("Forbidden", detail), path)


def not_supported(path: str, value: Any, valid: Sequence[str]) -> Cause:
    supported = ", ".join(go_quote(v) for v in valid)
    return Cause(
        "FieldValueNotSupported",
        _with(f"Unsupported value: {go_value(value)}", f"supported values: {supported}" if valid else ""),
        path,
    )


def not_found(path: str, value: Any) -> Cause:
    return Cause("FieldValueNotFound", f"Not found: {go_value(value)}", path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {go_value(value)}", path)


def sort_by_error(causes: list[Cause]) -> list[Cause]:
    """`sort.Slice(allErrs, ... Error() < ...)`: ordered by `field: message`."""
    return sorted(causes, key=lambda c: f"{c.field}: {c.message}")
