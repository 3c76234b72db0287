"""Field errors in the shape of Kubernetes' field.ErrorList: a path, a kind and a message."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# How update rules say that a field cannot change on an existing job.
RECREATE = "delete and recreate the job to change it"

# How every message prints a value a user wrote, as Kubernetes prints the bad value of a field error:
# `QUOTE.encode(value)` gives a string in double quotes ("Some"), null, true/false and numbers bare,
# a list or an object as compact JSON ({"cpu":"1"}). Strings keep non-ASCII letters as they are.
# Where it differs from Go: JSON's escapes stand in for %q, which differ for control characters, DEL
# and non-printable Unicode ("\u0007" where Go writes "\a"; DEL and U+00A0 unescaped); an object's
# keys keep the order they were written in (Go sorts them; sorting would fail on YAML's mixed key
# types) and its <, > and & are not escaped; a float with no fraction keeps its ".0" where Go prints 1.
# A value JSON cannot hold prints as its str() in quotes.
QUOTE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


class ErrorKind(StrEnum):
    REQUIRED = "Required"
    INVALID = "Invalid"
    FORBIDDEN = "Forbidden"
    NOT_SUPPORTED = "NotSupported"
    DUPLICATE = "Duplicate"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field. `str()` gives `path: Kind: message`."""

    path: str
    kind: ErrorKind
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.kind.value}: {self.message}"


def json_int(value: object) -> int | None:
    """`value` when it is a JSON integer (booleans are not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def json_type(value: object) -> str:
    """The JSON type of a wire value, as error messages name it ("got integer")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def json_object(raw: object, path: str) -> tuple[dict[str, Any] | None, list[FieldError]]:
    """An annotation value that must hold a JSON object: the object, or the one error (at `path`)
    saying why it is not one."""
    if not isinstance(raw, str):
        return None, [invalid(path, f"must be a JSON object string, not {json_type(raw)}")]
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, [invalid(path, f"not valid JSON: {exc}")]
    if not isinstance(value, dict):
        return None, [invalid(path, f"must be a JSON object, not {json_type(value)}")]
    return value, []


def required(path: str, message: str) -> FieldError:
    return FieldError(path, ErrorKind.REQUIRED, message)


def invalid(path: str, message: str) -> FieldError:
    return FieldError(path, ErrorKind.INVALID, message)


def forbidden(path: str, message: str) -> FieldError:
    return FieldError(path, ErrorKind.FORBIDDEN, message)


def not_supported(path: str, value: object, valid: Iterable[str]) -> FieldError:
    kind, choices = ErrorKind.NOT_SUPPORTED, ", ".join(QUOTE.encode(v) for v in valid)
    return FieldError(path, kind, f"{QUOTE.encode(value)} is not supported: must be one of {choices}")


def duplicate(path: str, message: str) -> FieldError:
    return FieldError(path, ErrorKind.DUPLICATE, message)


def join_path(base: str, *parts: str | int) -> str:
    """Append path segments: names with `.name`, ints and map keys with `[key]`.

    A part written as `[Key]` is appended verbatim (a map key such as a replica type).
    """
    out = base
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("["):
            out += part
        else:
            out = f"{out}.{part}" if out else part
    return out


def format_errors(errors: Sequence[FieldError]) -> str:
    return "; ".join(str(e) for e in errors)
