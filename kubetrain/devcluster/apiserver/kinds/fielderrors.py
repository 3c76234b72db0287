"""Causes as k8s.io/apimachinery pkg/util/validation/field words them (`field.Invalid`,
`field.Required`, `field.Duplicate`, `field.NotSupported`): the value shown as Go's field errors
print it, strings quoted, numbers bare."""

from __future__ import annotations

import json
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause


def shown(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def invalid(path: str, value: Any, message: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {shown(value)}: {message}", path)


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", f"Required value: {detail}" if detail else "Required value", path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {shown(value)}", path)


def not_supported(path: str, value: Any, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(shown(s) for s in supported)
    message = f"Unsupported value: {shown(value)}: supported values: {listed}"
    return Cause("FieldValueNotSupported", message, path)


def dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []
