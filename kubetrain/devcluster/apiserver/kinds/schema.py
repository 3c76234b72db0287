"""Structural-schema handling of custom resources, as kube-apiserver's apiextensions does it.

- `prune(obj, schema)`: drop fields the schema does not specify (unless
  `x-kubernetes-preserve-unknown-fields`), keeping apiVersion/kind/metadata at the root and of
  embedded resources.
- `prune_nulls(obj, schema)`: drop `null` fields the schema neither allows (`nullable`) nor
  defaults (apiextensions' `PruneNonNullableNullsWithoutDefaults`, run before defaulting): a
  manifest's `env: null` is stored without `env`, not refused.
- `apply_defaults(obj, schema)`: set `default`s of absent (or null, non-nullable) fields.
- `validate(obj, schema)`: the violations as `errors.Cause`s with field paths and messages worded
  like kube-openapi's validator (e.g. `spec.replicas in body must be of type integer: "string"`).
Of `format`s, the numeric ranges are checked (`int32`, `int64`, `float`: `_in_range`); string
formats (`date-time`, …) are not evaluated. CEL rules (`x-kubernetes-validations`) are
crds/celeval.py's.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj

_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def prune(obj: Any, schema: Obj, root: bool = True, dropped: list[str] | None = None, path: str = "") -> Any:
    """Remove unspecified fields in place; their paths (`.spec.foo`) are appended to `dropped`."""
    if isinstance(obj, dict):
        if schema.get("x-kubernetes-embedded-resource"):
            root = True
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        for key in list(obj):
            if root and key in _ROOT_KEEP:
                continue
            sub = f"{path}.{key}"
            if props is not None and key in props:
                obj[key] = prune(obj[key], props[key], False, dropped, sub)
            elif isinstance(additional, dict):
                obj[key] = prune(obj[key], additional, False, dropped, sub)
            elif additional is True or preserve or (props is None and not schema.get("type")):
                continue
            else:
                del obj[key]
                if dropped is not None:
                    dropped.append(sub)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [prune(item, schema["items"], False, dropped, f"{path}[{i}]") for i, item in enumerate(obj)]
    return obj


def _field_schema(key: str, schema: Obj | None) -> Obj | None:
    """The schema of field `key` (a property, else `additionalProperties`), as upstream's
    `getSchemaForField`; None where the schema says nothing of it."""
    if schema is None:
        return None
    props = schema.get("properties") or {}
    if key in props:
        sub: Obj = props[key]
        return sub
    additional = schema.get("additionalProperties")
    return additional if isinstance(additional, dict) else None


def prune_nulls(obj: Any, schema: Obj | None) -> None:
    """Remove, in place, every map field whose value is `null` while its schema is neither
    `nullable` nor has a `default` (a defaulted one is defaulted next); list items are never
    removed, only looked into. Fields the schema does not describe are left alone."""
    if isinstance(obj, dict):
        for key in list(obj):
            sub = _field_schema(key, schema)
            if obj[key] is None and sub is not None and not sub.get("nullable") and "default" not in sub:
                del obj[key]
            else:
                prune_nulls(obj[key], sub)
    elif isinstance(obj, list):
        items = schema.get("items") if schema is not None else None
        for item in obj:
            prune_nulls(item, items if isinstance(items, dict) else None)


def apply_defaults(obj: Any, schema: Obj) -> Any:
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if "default" in sub and (key not in obj or (obj[key] is None and not sub.get("nullable"))):
                obj[key] = copy.deepcopy(sub["default"])
            if key in obj:
                obj[key] = apply_defaults(obj[key], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in obj:
                if key not in props:
                    obj[key] = apply_defaults(obj[key], additional)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(item, schema["items"]) for item in obj]
    return obj


def _show(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _type_ok(value: Any, typ: str, schema: Obj) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    if typ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if typ == "string":
        return isinstance(value, str)
    if typ == "boolean":
        return isinstance(value, bool)
    if typ == "array":
        return isinstance(value, list)
    if typ == "object":
        return isinstance(value, dict)
    return True


def validate(obj: Any, schema: Obj, path: str = "") -> list[Cause]:
    out: list[Cause] = []
    _validate(obj, schema, path, out, root=True)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _validate(value: Any, schema: Obj, path: str, out: list[Cause], root: bool = False) -> None:
    if value is None:
        if schema.get("nullable") or not schema.get("type"):
            return
        out.append(
            Cause(
                "FieldValueTypeInvalid",
                f'Invalid value: "null": {path} in body must be of type {schema["type"]}: "null"',
                path,
            )
        )
        return
    typ = schema.get("type", "")
    if typ and not _type_ok(value, typ, schema):
        out.append(
            Cause(
                "FieldValueTypeInvalid",
                f"Invalid value: {_show(value)}: {path} in body must be of type {typ}: {_show(value)}",
                path,
            )
        )
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_show(v) for v in schema["enum"])
        out.append(
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {_show(value)}: supported values: {allowed}",
                path,
            )
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _numbers(value, schema, path, out)
    if isinstance(value, str):
        _strings(value, schema, path, out)
    if isinstance(value, list):
        _arrays(value, schema, path, out)
    if isinstance(value, dict):
        _objects(value, schema, path, out, root)
    for sub in schema.get("allOf") or []:
        _validate(value, sub, path, out)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if options:
            matches = sum(1 for sub in options if not validate(value, sub, path))
            if (key == "anyOf" and matches == 0) or (key == "oneOf" and matches != 1):
                verb = "at least one" if key == "anyOf" else "exactly one"
                out.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {_show(value)}: {path} in body must match {verb} schema",
                        path,
                    )
                )
    if "not" in schema and not validate(value, schema["not"], path):
        out.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {_show(value)}: {path} in body must not validate the schema (not)",
                path,
            )
        )


def _invalid(value: Any, path: str, text: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_show(value)}: {path} in body {text}", path)


_FLOAT32_MAX = 3.4028234663852886e38
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _in_range(value: float, schema: Obj) -> str | None:
    """What a number's schema `format` makes of it: kube-openapi's `numberValidator` (its
    `SchemaValidator.numberValidator` passes an integer's `int32` / `int64` and a number's `float`
    / `double`, other formats as none) through `IsValueValidAgainstRange` (validate/values.go):
    an integer must fit its format, int64 without one; a `float` number must fit a float32. The
    text upstream's plain error carries, else None."""
    typ, fmt = schema.get("type"), schema.get("format")
    if typ == "integer":
        fmt = fmt if fmt in _INT_RANGES else ""
        low, high = _INT_RANGES[fmt or "int64"]
        if low <= value <= high:
            return None
    elif typ == "number" and fmt == "float":
        if abs(value) <= _FLOAT32_MAX:
            return None
    else:
        return None
    return f"with format {fmt}" if fmt else "(default format)"


def _numbers(value: float, schema: Obj, path: str, out: list[Cause]) -> None:
    if (outside := _in_range(value, schema)) is not None:
        # Not a validation error upstream: apiextensions' kubeOpenAPIResultToFieldErrors makes it
        # `field.Invalid(nil, "", err)`, so the cause's field is a nil path's `<nil>`.
        text = f"Checked value must be of type {schema['type']} {outside} in {path}"
        out.append(Cause("FieldValueInvalid", f'Invalid value: "": {text}', "<nil>"))
    if "minimum" in schema:
        low = schema["minimum"]
        if schema.get("exclusiveMinimum") and value <= low:
            out.append(_invalid(value, path, f"should be greater than {_show(low)}"))
        elif value < low:
            out.append(_invalid(value, path, f"should be greater than or equal to {_show(low)}"))
    if "maximum" in schema:
        high = schema["maximum"]
        if schema.get("exclusiveMaximum") and value >= high:
            out.append(_invalid(value, path, f"should be less than {_show(high)}"))
        elif value > high:
            out.append(_invalid(value, path, f"should be less than or equal to {_show(high)}"))
    if "multipleOf" in schema and schema["multipleOf"] and value % schema["multipleOf"] != 0:
        out.append(_invalid(value, path, f"should be a multiple of {_show(schema['multipleOf'])}"))


def _strings(value: str, schema: Obj, path: str, out: list[Cause]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        out.append(_invalid(value, path, f"should be at least {schema['minLength']} chars long"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.append(
            Cause("FieldValueTooLong", f"Too long: may not be more than {schema['maxLength']} bytes", path)
        )
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        out.append(_invalid(value, path, f"should match '{schema['pattern']}'"))


def _arrays(value: list[Any], schema: Obj, path: str, out: list[Cause]) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        out.append(_invalid(value, path, f"should have at least {schema['minItems']} items"))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        out.append(
            Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {schema['maxItems']} items",
                path,
            )
        )
    # A set's (and a map list's) uniqueness is crds/listtype.py's: upstream checks it apart from
    # the schema (not for defaults), once per duplicated value.
    if schema.get("uniqueItems"):
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                out.append(Cause("FieldValueDuplicate", f"Duplicate value: {_show(item)}", f"{path}[{i}]"))
            seen.append(item)
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _validate(item, items, f"{path}[{i}]", out)


def _objects(value: dict[str, Any], schema: Obj, path: str, out: list[Cause], root: bool) -> None:
    for name in schema.get("required") or []:
        if name not in value:
            out.append(Cause("FieldValueRequired", "Required value", _join(path, name)))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        out.append(_invalid(value, path, f"should have at least {schema['minProperties']} properties"))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        out.append(
            Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
                path,
            )
        )
    props = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        if root and key in _ROOT_KEEP:
            continue
        if key in props:
            _validate(item, props[key], _join(path, key), out)
        elif isinstance(additional, dict):
            _validate(item, additional, _join(path, key), out)
