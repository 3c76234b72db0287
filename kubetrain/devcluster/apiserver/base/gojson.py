"""How Go's encoding/json names a decoded JSON value in an `UnmarshalTypeError` ("cannot unmarshal
<kind> into Go value of type ..."), shared by request decoding and custom-resource coercion."""

from __future__ import annotations

from typing import Any


def unmarshal_kind(value: Any) -> str:
    """`UnmarshalTypeError.Value` of a decoded JSON value: object, array, string, bool, number,
    or "null" (which decodes into anything, so only a message about it names it)."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number"
