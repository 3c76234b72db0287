"""Parse a wire-form job (a plain dict) into its pydantic model, with Kubernetes-style errors.

`parse_job` picks the model through the framework registry (by `kind`) and turns every pydantic
error into a `FieldError` whose path is written the way Kubernetes writes field paths:
`spec.pytorchReplicaSpecs[Master].replicas`, `spec.elasticPolicy.rdzvConf[0].key`. Pydantic's own
wording never reaches the user where a better message exists: a bad enum value lists the valid
values, an unknown field names the valid fields, a wrong type names the expected type.

`read_typed` is the pipeline's type stage (docs/architecture.md, "One form per stage"): the
defaulted job's draft read into its model once, with every problem, for validation to take; the
parse stage already checked its kind and apiVersion (`typemeta.check_type_meta`) and settled its
framework.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from kubetrain.api.common import JobBase
from kubetrain.api.errors import (
    QUOTE,
    FieldError,
    format_errors,
    invalid,
    json_type,
    not_supported,
    required,
)
from kubetrain.api.groups import JOB_GROUPS, JOB_VERSION, KUBETRAIN_GROUP
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.jobdraft import JobDraft
from kubetrain.jobs.typemeta import check_type_meta

API_GROUP = KUBETRAIN_GROUP
API_VERSION = JOB_VERSION


class InvalidJobError(Exception):
    """The object is not a well-formed job; `errors` lists every problem found."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__(format_errors(self.errors))


def parse_job(obj: dict[str, Any], groups: Sequence[str] = JOB_GROUPS) -> JobBase:
    """The typed model of a job in wire form; raises `InvalidJobError` listing every problem."""
    errors = check_type_meta(obj, groups)
    if errors:
        raise InvalidJobError(errors)
    framework = get_framework(obj["kind"])
    assert framework is not None  # checked by check_type_meta
    return parse_model(obj, framework.job_model)


@dataclass(frozen=True)
class TypedJob:
    """A (defaulted) job read into its pydantic model once (`read_typed`). With `type_errors`
    (kind or apiVersion not accepted) nothing else of the job was read; otherwise `framework`
    is its kind's and `model` the job as typed, or None with the model's `errors`."""

    framework: Framework | None = None
    model: JobBase | None = None
    errors: tuple[FieldError, ...] = ()
    type_errors: tuple[FieldError, ...] = ()


def read_typed(draft: JobDraft) -> TypedJob:
    """The job of `draft` (the parse stage's, `jobdraft.read_draft`; defaulted or not) as its
    kind's model, or every problem found (never raises). Its kind and apiVersion were checked
    by the parse stage (`draft.type_errors`), which settled its framework."""
    if draft.type_errors or draft.framework is None:
        return TypedJob(type_errors=tuple(draft.type_errors))
    try:
        return TypedJob(draft.framework, parse_model(draft.wire, draft.framework.job_model))
    except InvalidJobError as exc:
        return TypedJob(draft.framework, None, tuple(exc.errors))


def parse_model(obj: dict[str, Any], model: type[JobBase]) -> JobBase:
    """`obj` (whose kind and apiVersion `check_type_meta` accepted) as `model`; raises
    `InvalidJobError` listing every problem."""
    try:
        # strict: like the API server, "3" is not an integer and "true" is not a boolean.
        return model.model_validate(obj, strict=True)
    except ValidationError as exc:
        raise InvalidJobError(pydantic_errors(exc, model)) from None


# ---------------------------------------------------------------------------------------------
# pydantic error → FieldError


def pydantic_errors(exc: ValidationError, model: type[BaseModel]) -> list[FieldError]:
    out: list[FieldError] = []
    seen: set[str] = set()
    for err in exc.errors(include_url=False):
        converted = _convert(err, model)
        # A value failing every branch of a union yields one error per branch: report it once.
        if converted.path not in seen:
            seen.add(converted.path)
            out.append(converted)
    return out


def _convert(err: Any, model: type[BaseModel]) -> FieldError:
    loc: tuple[str | int, ...] = tuple(err["loc"])
    path, leaf_type, parent_model, union = _walk(model, loc)
    etype: str = err["type"]
    value = err.get("input")
    if union is not None and etype not in ("missing", "extra_forbidden"):
        names = [_TYPE_NAMES.get(a, getattr(a, "__name__", str(a))) for a in get_args(union)]
        names = [n for n in names if n != "null"]
        return invalid(path, f"must be {' or '.join(names)}, got {json_type(value)}")
    if etype == "missing":
        return required(path, "required field is missing")
    if etype == "extra_forbidden":
        name = str(loc[-1]) if loc else ""
        return invalid(path, _unknown_field_message(name, parent_model))
    if etype in ("literal_error", "enum"):
        choices = _literal_values(leaf_type)
        if choices:
            return not_supported(path, value, choices)
    expected = _EXPECTED.get(etype)
    if expected is not None:
        return invalid(path, f"must be {expected}, got {json_type(value)}")
    if etype in ("model_type", "model_attributes_type", "dict_type", "mapping_type"):
        return invalid(path, f"must be an object (a mapping), got {json_type(value)}")
    if etype in ("list_type", "tuple_type"):
        return invalid(path, f"must be a list, got {json_type(value)}")
    return invalid(path, str(err.get("msg", "invalid value")))


_TYPE_NAMES: dict[Any, str] = {
    int: "an integer",
    float: "a number",
    str: "a string",
    bool: "a boolean",
    type(None): "null",
}

_EXPECTED: dict[str, str] = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "a boolean (true or false)",
    "bool_parsing": "a boolean (true or false)",
    "string_type": "a string",
    "float_type": "a number",
    "float_parsing": "a number",
}


def _unknown_field_message(name: str, parent: type[BaseModel] | None) -> str:
    if parent is None:
        return f"unknown field {QUOTE.encode(name)}"
    valid = sorted(_aliases(parent))
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f' (did you mean "{close[0]}"?)' if close else ""
    return f"unknown field {QUOTE.encode(name)}{hint}; valid fields are: {', '.join(valid)}"


def _aliases(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _field_by_alias(model: type[BaseModel], alias: str) -> Any:
    for name, info in model.model_fields.items():
        if (info.alias or name) == alias or name == alias:
            return info.annotation
    return None


def _unwrap_optional(tp: Any) -> Any:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _unwrap_optional(args[0])
    return tp


def _walk(model: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[str, Any, type[BaseModel] | None, Any]:
    """Kubernetes path of `loc`, the type annotated there, the model holding the last field, and
    the union type when pydantic reports the failure of one branch of a (non-Optional) union."""
    path = ""
    tp: Any = model
    parent: type[BaseModel] | None = None
    union: Any = None
    for part in loc:
        current = _unwrap_optional(tp)
        origin = get_origin(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            parent = current
            path = f"{path}.{part}" if path else str(part)
            tp = _field_by_alias(current, str(part))
        elif origin is dict:
            path += f"[{part}]"
            args = get_args(current)
            tp = args[1] if len(args) == 2 else Any
        elif origin is list:
            path += f"[{part}]"
            args = get_args(current)
            tp = args[0] if args else Any
        else:
            # Inside an untyped value (a template dict, a union branch name): keep going plainly.
            if isinstance(part, int):
                path += f"[{part}]"
            elif _is_union_tag(part) and get_origin(current) in (Union, types.UnionType):
                union = current
            else:
                path = f"{path}.{part}" if path else str(part)
            tp = Any
    return path or "<root>", _unwrap_optional(tp), parent, union


def _is_union_tag(part: str | int) -> bool:
    # pydantic names the failing branch of a union (`int`, `str`, `literal['a','b']`) in `loc`.
    return isinstance(part, str) and (part in ("int", "float", "str", "bool") or part.startswith("literal["))


def _literal_values(tp: Any) -> list[str]:
    tp = _unwrap_optional(tp)
    if get_origin(tp) is Literal:
        return [str(a) for a in get_args(tp)]
    return []
