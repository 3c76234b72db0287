"""The fields of built-in kinds, from the official Kubernetes OpenAPI schema: which fields of a
request body the Go types kube-apiserver decodes it into do not have.

```python
unknown_fields("", "v1", "Pod", body)          # ['spec.containers[0].imagee'], dropped from body
unknown_fields("", "v1", "Pod", body, drop=False)                       # only reported
has_schema("example.com", "v1", "Gadget")      # False: not a built-in kind
```

kube-apiserver decodes a built-in object into its Go type: a field the type does not have is
not stored. With fieldValidation Strict or Warn its strict decoder (sigs.k8s.io/json
`decodeState.newFieldError`, and runtime.DefaultUnstructuredConverter
`fromUnstructuredContext.recordUnknownField` for strategic merge patches) reports it as
`unknown field "<path>"`, the path being the JSON keys joined by `.` with list indices as
`[i]` (`spec.containers[0].imagee`); matching is case-sensitive. `unknown_fields` gives those
paths in document order (at most `MAX_REPORTED`) and removes the fields, so the stored object
is what the Go type keeps.

The schema is the one `kubernetes-validate` ships for Kubernetes `SCHEMA_VERSION` (the
non-strict flavour; only `properties`, `additionalProperties`, `items` and `$ref` are read). It
is parsed once, on first use (~0.1 s), and each definition is compiled on first use into a
`_Node` (a struct's fields, a map's values or a list's items; `None` for a value with nothing
to check inside: scalars, IntOrString, Quantity, and the types that hold raw JSON, `_RAW`).
A definition of `type: object` without properties that is not raw is an empty Go struct: all
of its fields are unknown.

Not detected: duplicate fields (the body is already a Python dict when it gets here; the last
value wins, as with kube-apiserver's Ignore).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

# The Kubernetes version whose schema built-in objects are decoded with: the version kubetrain's
# acceptance cluster runs.
SCHEMA_VERSION = "1.36.0"
_SCHEMA_FILE = f"kubernetes-json-schema/v{SCHEMA_VERSION}-local/_definitions.json"
_REF = "#/$defs/"
# At most this many unknown fields are reported (all are dropped), as sigs.k8s.io/json's
# `decodeState.saveStrictError` keeps at most 100 strict errors.
MAX_REPORTED = 100

# Go types whose JSON is kept as it is (runtime.RawExtension, metav1.FieldsV1, metav1.Patch) or
# decoded by their own UnmarshalJSON with the non-strict decoder (apiextensions JSON and the
# JSONSchemaPropsOr* unions): nothing inside them is reported.
_RAW = frozenset(
    {
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
    }
)


class _Node:
    """What to check inside one value: exactly one of `fields` (a struct: its field names, each
    to the node of its value), `values` (a map's values) or `items` (a list's items) is set. A
    node that is still a definition's name (str) is compiled on first use (types are recursive)."""

    __slots__ = ("fields", "items", "values")

    def __init__(
        self,
        fields: dict[str, _Node | str | None] | None = None,
        values: _Node | str | None = None,
        items: _Node | str | None = None,
    ) -> None:
        self.fields = fields
        self.values = values
        self.items = items


@lru_cache(maxsize=1)
def _definitions() -> dict[str, Any]:
    ref = resources.files("kubernetes_validate").joinpath(_SCHEMA_FILE)
    defs: dict[str, Any] = json.loads(ref.read_text(encoding="utf-8"))["$defs"]
    return defs


@lru_cache(maxsize=1)
def _kinds() -> dict[tuple[str, str, str], str]:
    """(group, version, kind) → the name of its definition."""
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in _definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            out.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")), name)
    return out


_compiled: dict[str, _Node | None] = {}


def _definition(name: str) -> _Node | None:
    if name not in _compiled:
        schema = _definitions().get(name)
        if schema is None or name in _RAW:
            _compiled[name] = None
        elif not ({"properties", "additionalProperties"} & schema.keys()) and "object" in _types(schema):
            _compiled[name] = _Node(fields={})  # an empty struct
        else:
            node = _compile(schema)
            _compiled[name] = _definition(node) if isinstance(node, str) else node  # an alias
    return _compiled[name]


def _types(schema: dict[str, Any]) -> list[str]:
    typ = schema.get("type")
    return [typ] if isinstance(typ, str) else list(typ or [])


def _compile(schema: dict[str, Any]) -> _Node | str | None:
    ref = schema.get("$ref")
    if isinstance(ref, str) and _REF in ref:
        return ref.split(_REF, 1)[1]  # compiled when first reached
    props = schema.get("properties")
    if isinstance(props, dict):
        return _Node(fields={key: _compile(sub) for key, sub in props.items()})
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        values = _compile(additional)
        return None if values is None else _Node(values=values)
    items = schema.get("items")
    if isinstance(items, dict):
        inner = _compile(items)
        return None if inner is None else _Node(items=inner)
    return None


def has_schema(group: str, version: str, kind: str) -> bool:
    return (group, version, kind) in _kinds()


def unknown_fields(group: str, version: str, kind: str, obj: Any, drop: bool = True) -> list[str]:
    """The paths of the fields of `obj` its kind's Go type does not have (none for a kind the
    schema does not know), removed from `obj` unless `drop` is false."""
    name = _kinds().get((group, version, kind))
    if name is None:
        return []
    found: list[str] = []
    _walk(obj, name, "", found, drop)
    return found


OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def unknown_metadata_fields(obj: Any) -> list[str]:
    """The paths of the fields a custom resource's `metadata` has that ObjectMeta does not,
    removed from it: apiextensions-apiserver objectmeta/coerce.go `GetObjectMetaWithOptions`
    round-trips the metadata through Go's JSON (which writes a map's keys sorted) into
    ObjectMeta strictly, so they come sorted at each level (`metadata.a`, `metadata.b.c`)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return []
    found: list[str] = []
    _walk(_keys_sorted(meta), OBJECT_META, "metadata", found, False)
    _walk(meta, OBJECT_META, "metadata", [], True)
    return found


def _keys_sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _keys_sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_keys_sorted(v) for v in value]
    return value


def opaque_paths(group: str, version: str, kind: str, obj: Any) -> list[str]:
    """The paths of the values in `obj` its kind's Go type decodes with their own UnmarshalJSON
    (`_RAW`): sigs.k8s.io/json hands such a value over whole (decode.go `indirect` finds the
    Unmarshaler, `d.skip()`s the value), so its strict decoder looks for no duplicate inside."""
    name = _kinds().get((group, version, kind))
    opaque: list[str] = []
    if name is not None:
        _walk(obj, name, "", [], False, opaque)
    return opaque


def _walk(
    value: Any,
    node: _Node | str | None,
    path: str,
    found: list[str],
    drop: bool,
    opaque: list[str] | None = None,
) -> None:
    if isinstance(node, str):
        if opaque is not None and node in _RAW:
            opaque.append(path)
        node = _definition(node)
    if node is None:
        return
    if isinstance(value, dict):
        fields = node.fields
        if fields is not None:
            unknown: list[str] = []
            for key, item in value.items():
                if key in fields:
                    sub = fields[key]
                    if sub is not None and isinstance(item, (dict, list)):
                        _walk(item, sub, f"{path}.{key}" if path else key, found, drop, opaque)
                else:
                    unknown.append(key)
                    if len(found) < MAX_REPORTED:
                        found.append(f"{path}.{key}" if path else key)
            if drop:
                for key in unknown:
                    del value[key]
        elif node.values is not None:
            for key, item in value.items():
                if isinstance(item, (dict, list)):
                    _walk(item, node.values, f"{path}.{key}" if path else key, found, drop, opaque)
    elif isinstance(value, list) and node.items is not None:
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _walk(item, node.items, f"{path}[{i}]", found, drop, opaque)
