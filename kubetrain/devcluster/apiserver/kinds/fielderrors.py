"""apimachinery's `field.Error` constructors as `errors.Cause`s, worded as `ErrorBody()` words them.

`required(path, detail)` → `Required value: detail`; `invalid(path, value, detail)` →
`Invalid value: "value": detail` (strings quoted with Go's %q, numbers and booleans plain, string
lists as Go's %#v `[]string{"a", "b"}`); `forbidden` → `Forbidden: detail`; `not_supported` →
`Unsupported value: "x": supported values: "a", "b"`; `duplicate` → `Duplicate value: "x"`.
Upstream prints values of Go struct types with %#v (including memory addresses); those are given
here as `Go(text)` holding the type name with `{...}` in place of the fields.

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
    """How `field.Error.ErrorBody` prints a bad value."""
    if isinstance(value, Go):
        return value.text
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(go_quote(v) for v in value) + "}"
    if isinstance(value, dict):
        return (
            "map[string]interface {}{"
            + ", ".join(f"{go_quote(k)}:{go_value(v)}" for k, v in sorted(value.items()))
            + "}"
        )
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_value(v) for v in value) + "}"
    return str(value)


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
