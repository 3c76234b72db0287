"""The metadata of resources embedded in a custom resource, coerced as kube-apiserver decodes a
request body (apiextensions-apiserver objectmeta/algorithm.go `CoerceWithOptions`, called after
pruning by customresource_handler.go `unstructuredSchemaCoercer.apply`, with
`DropInvalidFields` false and `ReturnUnknownFieldPaths` under Strict and Warn).

```python
coerce_error(obj, schema)      # None, or the field error's text: "spec.t.metadata: Invalid value: ..."
coerce(obj, schema)            # ["spec.t.metadata.foo"]: dropped from obj, sorted (sort.Strings)
```

At each node marked `x-kubernetes-embedded-resource` (below the root: the root's metadata is
builtinschema.unknown_metadata_fields'), `apiVersion` and `kind` must be strings (`must be a
string`), and `metadata` is round-tripped through Go's JSON into metav1.ObjectMeta
(coerce.go `GetObjectMetaWithOptions`, sigs.k8s.io/json `UnmarshalStrict`): a field ObjectMeta
does not have is dropped and reported as `<path>.metadata.<field>`; a field of the wrong type is
the decoder's first error (`json: cannot unmarshal string into Go struct field
ObjectMeta.labels of type map[string]string`), which fails the request; and the metadata is
written back as `SetObjectMeta` converts the struct: zero values of `omitempty` fields left out,
a null map value as "", timestamps in UTC without fractions, a zero `creationTimestamp` removed.
Upstream visits a map's keys in Go's random order; devcluster in sorted order, so where two
embedded resources are both invalid, the one named is the first in key order.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from kubetrain.devcluster.apiserver.base.gojson import unmarshal_kind
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.crds import gotime

# Go types of ObjectMeta's fields (apimachinery meta/v1 types.go): the JSON kinds, the Go type
# named in errors, and whether `omitempty` drops a zero value; structs as (name, fields).
_STR, _INT, _BOOL, _TIME, _RAW = "string", "int64", "bool", "Time", "FieldsV1"
_OWNER: dict[str, tuple[Any, bool]] = {
    "apiVersion": (_STR, False),
    "kind": (_STR, False),
    "name": (_STR, False),
    "uid": ("types.UID", False),
    "controller": (("*", _BOOL), True),
    "blockOwnerDeletion": (("*", _BOOL), True),
}
_MANAGED: dict[str, tuple[Any, bool]] = {
    "manager": (_STR, True),
    "operation": ("v1.ManagedFieldsOperationType", True),
    "apiVersion": (_STR, True),
    "time": (("*", _TIME), True),
    "fieldsType": (_STR, True),
    "fieldsV1": (("*", _RAW), True),
    "subresource": (_STR, True),
}
_META: dict[str, tuple[Any, bool]] = {
    "name": (_STR, True),
    "generateName": (_STR, True),
    "namespace": (_STR, True),
    "selfLink": (_STR, True),
    "uid": ("types.UID", True),
    "resourceVersion": (_STR, True),
    "generation": (_INT, True),
    "creationTimestamp": (_TIME, False),
    "deletionTimestamp": (("*", _TIME), True),
    "deletionGracePeriodSeconds": (("*", _INT), True),
    "labels": (("map", _STR), True),
    "annotations": (("map", _STR), True),
    "ownerReferences": (("[]", ("struct", ("OwnerReference", _OWNER))), True),
    "finalizers": (("[]", _STR), True),
    "managedFields": (("[]", ("struct", ("ManagedFieldsEntry", _MANAGED))), True),
}
_STRINGS = (_STR, "types.UID", "v1.ManagedFieldsOperationType")
_INT64 = 2**63


class MetaError(ValueError):
    """The error the metadata's decoding ends with (str() is Go's text)."""


def coerce_error(obj: Any, schema: Obj | None) -> str | None:
    """The field error coercing `obj` ends with, as `field.Error.Error()` words it, or None;
    `obj` is left as it is."""
    if not has_embedded(schema):
        return None
    try:
        _walk("", obj, schema, [], drop=False)
    except _FieldError as e:
        return str(e)
    return None


def coerce(obj: Any, schema: Obj | None) -> list[str]:
    """Coerce `obj`'s embedded metadata in place; the paths of the fields dropped, sorted.
    `coerce_error` must have found no error."""
    if not has_embedded(schema):
        return []
    found: list[str] = []
    _walk("", obj, schema, found, drop=True)
    return sorted(found)


_EMBEDDED_SEEN: dict[int, tuple[Obj, bool]] = {}  # id(schema) -> (schema, answer); schemas kept


def has_embedded(schema: Obj | None) -> bool:
    """Whether any node of `schema` below the root is an embedded resource (else there is
    nothing to coerce), remembered per schema object (a served CRD version's)."""
    if not isinstance(schema, dict):
        return False
    seen = _EMBEDDED_SEEN.get(id(schema))
    if seen is not None and seen[0] is schema:
        return seen[1]
    answer = _mentions_embedded(schema, root=True)
    if len(_EMBEDDED_SEEN) >= 512:
        _EMBEDDED_SEEN.clear()
    _EMBEDDED_SEEN[id(schema)] = (schema, answer)
    return answer


def _mentions_embedded(s: Any, root: bool = False) -> bool:
    if not isinstance(s, dict):
        return False
    if not root and s.get("x-kubernetes-embedded-resource"):
        return True
    children = [*(s.get("properties") or {}).values(), s.get("additionalProperties"), s.get("items")]
    return any(_mentions_embedded(c) for c in children)


class _FieldError(Exception):
    pass


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(path: str, x: Any, s: Obj | None, found: list[str], drop: bool) -> None:
    if not isinstance(s, dict):
        return
    if isinstance(x, dict):
        embedded = bool(s.get("x-kubernetes-embedded-resource"))
        props = s.get("properties") or {}
        additional = s.get("additionalProperties")
        for k in sorted(x):
            v = x[k]
            if embedded and k in ("apiVersion", "kind") and not isinstance(v, str):
                raise _FieldError(f"{_child(path, k)}: Invalid value: {go_json(v)}: must be a string")
            if embedded and k == "metadata":
                at = _child(path, "metadata")
                try:
                    meta, unknown = object_meta(v, at)
                except MetaError as e:
                    raise _FieldError(f"{at}: Invalid value: {go_json(v)}: {e}") from None
                found.extend(unknown)
                if drop:
                    x[k] = meta
            if k in props:
                _walk(_child(path, k), v, props[k], found, drop)
            elif isinstance(additional, dict):
                _walk(f"{path}[{k}]", v, additional, found, drop)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _walk(f"{path}[{i}]", v, s.get("items"), found, drop)


def object_meta(value: Any, prefix: str) -> tuple[Obj, list[str]]:
    """`GetObjectMetaWithOptions` then `SetObjectMeta`: the metadata as written back and the
    paths of its unknown fields (`prefix.field`, in the order the strict decoder meets them in
    Go's encoding of the map, keys sorted), or raise `MetaError` with the decoder's error: the
    first type error met, unless a timestamp's UnmarshalJSON fails: that error stops the decoder
    at once and wins over a type error saved before it (decode.go `unmarshal`)."""
    state = _State()
    try:
        out = _decode(value, ("struct", ("ObjectMeta", _META)), "", None, state)
    except _TimeError as e:
        raise MetaError(str(e)) from None
    if state.error is not None:
        raise MetaError(state.error)
    meta = out if isinstance(out, dict) else {}
    if meta.get("creationTimestamp") is None:
        meta.pop("creationTimestamp", None)
    return meta, [f"{prefix}.{p}" for p in state.unknown]


class _State:
    def __init__(self) -> None:
        self.error: str | None = None
        self.unknown: list[str] = []
        self.stack: list[str] = []  # the errorContext FieldStack (struct fields only)
        self.struct = ""

    def type_error(self, got: str, go_type: str) -> None:
        if self.error is None:
            where = f"Go struct field {self.struct}.{'.'.join(self.stack)}" if self.struct else "Go value"
            self.error = f"json: cannot unmarshal {got} into {where} of type {go_type}"


def _type_name(t: Any) -> str:
    if isinstance(t, str):
        return {_TIME: "v1.Time", _RAW: "v1.FieldsV1"}.get(t, t)
    if t[0] == "*":
        return _type_name(t[1])
    if t[0] == "map":
        return f"map[string]{_type_name(t[1])}"
    if t[0] == "[]":
        return "[]" + _type_name(t[1])
    return f"v1.{t[1][0]}"


def _decode(v: Any, t: Any, path: str, zero: Any, st: _State) -> Any:
    """`v` decoded into Go type `t` and converted back; `zero` what a null leaves."""
    if isinstance(t, tuple) and t[0] == "*":
        return None if v is None else _decode(v, t[1], path, None, st)
    if t == _TIME:
        return _time(v)
    if t == _RAW:
        return v
    if v is None:
        return zero
    if t in _STRINGS or t in (_INT, _BOOL):
        return _scalar(v, t, st)
    kind, go = unmarshal_kind(v), _type_name(t)
    if t[0] == "map":
        if kind != "object":
            st.type_error(kind, go)
            return None
        return {k: _decode(item, t[1], path, "", st) for k, item in v.items()}
    if t[0] == "[]":
        if kind != "array":
            st.type_error(kind, go)
            return None
        if t[1] == _STR:
            return [_decode(item, _STR, path, "", st) for item in v]
        # a null element is a zero struct, written back with its non-omitempty fields
        return [
            _decode({} if item is None else item, t[1], f"{path}[{i}]", None, st) for i, item in enumerate(v)
        ]
    name, fields = t[1]
    if kind != "object":
        st.type_error(kind, go)
        return {}
    return _struct(v, name, fields, path, st)


def _struct(v: Obj, name: str, fields: dict[str, tuple[Any, bool]], path: str, st: _State) -> Obj:
    out: Obj = {}
    for key in sorted(v):  # Go's encoding of the map: keys sorted
        spec = fields.get(key)
        if spec is None:
            st.unknown.append(f"{path}.{key}" if path else key)
            continue
        outer = (st.stack, st.struct)
        st.stack, st.struct = [*st.stack, key], name
        value = _decode(v[key], spec[0], f"{path}.{key}" if path else key, None, st)
        st.stack, st.struct = outer
        out[key] = value
    result: Obj = {}
    for key, (typ, omitempty) in fields.items():  # ToUnstructured of the struct
        value = out.get(key, _zero(typ))
        pointer = isinstance(typ, tuple) and typ[0] == "*"
        if omitempty and (value is None or (not pointer and _empty(value))):
            continue
        result[key] = value
    return result


def _empty(value: Any) -> bool:
    return value == "" or value == {} or value == [] or (type(value) is int and value == 0)


def _zero(t: Any) -> Any:
    if t in _STRINGS:
        return ""
    if t == _INT:
        return 0
    return None


def _time(v: Any) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise _TimeError(f"json: cannot unmarshal {unmarshal_kind(v)} into Go value of type string")
    try:
        t = gotime.parse_rfc3339(v)
    except gotime.GoTimeError as e:
        raise _TimeError(str(e)) from None
    return None if t == gotime.ZERO else gotime.format_rfc3339(t)


class _TimeError(Exception):
    pass


def _scalar(v: Any, t: str, st: _State) -> Any:
    kind = unmarshal_kind(v)
    if t == _INT:
        if kind != "number":
            st.type_error(kind, t)
            return 0
        if isinstance(v, float) and not (v.is_integer() and -_INT64 <= v < _INT64):
            st.type_error(f"number {go_number(v)}", t)
            return 0
        if not -_INT64 <= int(v) < _INT64:
            st.type_error(f"number {int(v)}", t)
            return 0
        return int(v)
    want = "bool" if t == _BOOL else "string"
    if kind != want:
        st.type_error(kind, t)
        return False if t == _BOOL else ""
    return v


def go_number(v: float) -> str:
    """encoding/json's float64: the shortest digits, `e` form below 1e-6 or from 1e21 (`1e-7`)."""
    if not math.isfinite(v):
        return str(v)
    if v == 0 or 1e-6 <= abs(v) < 1e21:
        return format(Decimal(repr(v)), "f")
    mant, exp = repr(v).split("e")
    return f"{mant}e{exp[0]}{exp[1:].lstrip('0') if exp[0] == '-' else exp[1:]}"


def go_json(v: Any) -> str:
    """`json.Marshal` of a decoded value: keys sorted, no spaces, `<`, `>`, `&` escaped, whole
    numbers as integers (the unstructured object holds them as int64)."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{go_json(k)}:{go_json(v[k])}" for k in sorted(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(go_json(i) for i in v) + "]"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < _INT64 else go_number(v)
    text = json.dumps(v, ensure_ascii=False)
    for ch, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return text
