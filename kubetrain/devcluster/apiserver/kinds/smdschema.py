"""The structured-merge-diff type of an object: which maps are structs or granular maps, which
lists are associative (by which keys), sets or atomic — what k8s.io/kube-openapi's `schemaconv`
derives from a kind's OpenAPI schema for the field manager.

```python
t = root_type(rt, "v1")        # the kind's type; DEDUCED for a kind without a schema
resolve(t.fields["metadata"])  # the ObjectMeta struct
```

Sources: built-in kinds use the official OpenAPI definitions (builtinschema.py); custom resources
their version's structural schema with `metadata` typed as ObjectMeta, as the apiserver's
`TypeConverter` for CRDs does. Rules (schemaconv `convertArray`/`convertMap`, and the
`x-kubernetes-*` extensions of a CRD schema):

- an array with `x-kubernetes-list-type: map` is associative by `x-kubernetes-list-map-keys`,
  `set` a set of scalars, `atomic` atomic; without a list type a built-in list with
  `x-kubernetes-patch-strategy: merge` and a `x-kubernetes-patch-merge-key` is associative by that
  key (a merge without key: a set) and every other list is atomic;
- an object with `x-kubernetes-map-type: atomic` is atomic, else granular: `properties` are its
  fields, `additionalProperties` the type of any other key;
- `x-kubernetes-preserve-unknown-fields` and kinds without a schema are upstream's deduced type:
  maps granular, lists atomic.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.base.types import ResourceType
from kubetrain.devcluster.apiserver.kinds import builtinschema

SCALAR, ATOMIC, MAP, LIST, DEDUCED_KIND = "scalar", "atomic", "map", "list", "deduced"
OBJECT_META = builtinschema.OBJECT_META
_REF = "#/$defs/"
# List-map key fields the official OpenAPI gives a default for (ContainerPort, ServicePort,
# EndpointPort `protocol`: "TCP"): upstream fills a missing key from its default.
_KEY_DEFAULTS = {"protocol": "TCP"}


class Type:
    """One resolved type. `kind` MAP: `fields` (a struct's fields, name → schema node) and `elem`
    (the node of any other key); LIST: `relationship` ("associative" or "set"), `keys` and `elem`
    (the items' node)."""

    __slots__ = ("elem", "fields", "keys", "kind", "relationship")

    def __init__(
        self,
        kind: str,
        fields: dict[str, Any] | None = None,
        elem: Any = None,
        relationship: str = "",
        keys: tuple[str, ...] = (),
    ) -> None:
        self.kind = kind
        self.fields = fields or {}
        self.elem = elem
        self.relationship = relationship
        self.keys = keys


DEDUCED = Type(DEDUCED_KIND)
_SCALAR = Type(SCALAR)
_ATOMIC = Type(ATOMIC)
_cache: dict[int, tuple[Any, Type]] = {}


def _types(node: dict[str, Any]) -> list[str]:
    typ = node.get("type")
    return [typ] if isinstance(typ, str) else list(typ or [])


def _deref(node: Any) -> Any:
    while isinstance(node, dict):
        ref = node.get("$ref")
        if not (isinstance(ref, str) and _REF in ref):
            all_of = node.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and "properties" not in node:
                node = all_of[0]
                continue
            return node
        node = builtinschema._definitions().get(ref.split(_REF, 1)[1])
    return node


def resolve(node: Any) -> Type:
    """The type a schema node stands for (memoized: schema nodes live as long as their kind)."""
    if node is None or isinstance(node, Type):
        return node if isinstance(node, Type) else DEDUCED
    hit = _cache.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    out = _resolve(_deref(node))
    _cache[id(node)] = (node, out)
    return out


def _resolve(node: Any) -> Type:
    if not isinstance(node, dict):
        return DEDUCED
    types = _types(node)
    props = node.get("properties")
    additional = node.get("additionalProperties")
    if "array" in types or "items" in node:
        return _list(node)
    if isinstance(props, dict) or isinstance(additional, dict) or "object" in types:
        if node.get("x-kubernetes-map-type") == "atomic":
            return _ATOMIC
        if isinstance(additional, dict):
            elem: Any = additional
        elif additional is True or node.get("x-kubernetes-preserve-unknown-fields"):
            elem = DEDUCED
        elif isinstance(props, dict):
            elem = None  # a struct: no other keys
        else:
            elem = DEDUCED  # an object without a schema of its keys (e.g. RawExtension)
        return Type(MAP, fields=dict(props) if isinstance(props, dict) else {}, elem=elem)
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return DEDUCED
    return _SCALAR


def _list(node: dict[str, Any]) -> Type:
    items = node.get("items")
    list_type = node.get("x-kubernetes-list-type")
    if list_type is None and "merge" in str(node.get("x-kubernetes-patch-strategy", "")).split(","):
        merge_key = node.get("x-kubernetes-patch-merge-key")
        list_type = "map" if merge_key else "set"
        keys: tuple[str, ...] = (merge_key,) if merge_key else ()
    else:
        keys = tuple(node.get("x-kubernetes-list-map-keys") or ())
    if list_type == "map" and keys:
        return Type(LIST, elem=items, relationship="associative", keys=keys)
    if list_type == "set":
        return Type(LIST, elem=items, relationship="set")
    return _ATOMIC


def field_type(t: Type, name: str) -> tuple[Type, bool]:
    """The type of a map's key `name`, and whether it is a declared field (`Map.FindField`)."""
    if t.kind == DEDUCED_KIND:
        return DEDUCED, False
    node = t.fields.get(name)
    if node is not None:
        return resolve(node), True
    return (resolve(t.elem) if t.elem is not None else DEDUCED), False


def key_defaults(t: Type) -> dict[str, Any]:
    """Defaults of an associative list's key fields, for items that omit them."""
    item = resolve(t.elem)
    out: dict[str, Any] = {}
    for k in t.keys:
        node = _deref(item.fields.get(k)) if item.kind == MAP else None
        if isinstance(node, dict) and "default" in node:
            out[k] = node["default"]
        elif k in _KEY_DEFAULTS:
            out[k] = _KEY_DEFAULTS[k]
    return out


def root_type(rt: ResourceType, version: str) -> Type:
    """The type of objects of `rt` at `version`."""
    if rt.custom:
        sch = rt.schemas.get(version)
        if not isinstance(sch, dict):
            return DEDUCED
        root = resolve(sch)
        if root.kind != MAP:
            return DEDUCED
        fields = dict(root.fields)
        fields["metadata"] = {"$ref": _REF + OBJECT_META}
        fields.setdefault("apiVersion", {"type": "string"})
        fields.setdefault("kind", {"type": "string"})
        return _memo_root(("crd", id(sch)), sch, Type(MAP, fields=fields, elem=root.elem))
    name = builtinschema._kinds().get((rt.group, version, rt.kind))
    if name is None:
        return DEDUCED
    return resolve(builtinschema._definitions()[name])


# The Go zero value of a built-in kind as JSON: struct fields that are not pointers are never
# omitted (`json:"spec,omitempty"` keeps an empty struct), so the empty object a create starts
# from (`Creater.New`) already has them, and a create does not take the maps themselves.
_POD_TEMPLATE: dict[str, Any] = {"metadata": {}, "spec": {}}
_ZERO_SPECS: dict[str, dict[str, Any]] = {
    "Deployment": {"template": _POD_TEMPLATE},
    "ReplicaSet": {"template": _POD_TEMPLATE},
    "StatefulSet": {"template": _POD_TEMPLATE},
    "DaemonSet": {"template": _POD_TEMPLATE},
    "Job": {"template": _POD_TEMPLATE},
    "CronJob": {"jobTemplate": {"metadata": {}, "spec": {"template": _POD_TEMPLATE}}},
    "PodTemplate": {},
}


def zero_object(rt: ResourceType) -> dict[str, Any]:
    """The object a create compares with: `{}` for a custom resource (unstructured), a built-in
    kind's zero value (metadata, and spec and status where the kind has them) otherwise."""
    if rt.custom:
        return {}
    fields = root_type(rt, rt.storage_version).fields
    out: dict[str, Any] = {"metadata": {}}
    if rt.kind == "PodTemplate":
        out["template"] = dict(_POD_TEMPLATE)
    for name in ("spec", "status"):
        if name in fields:
            out[name] = dict(_ZERO_SPECS.get(rt.kind, {})) if name == "spec" else {}
    return copy.deepcopy(out)  # the caller's to change


def map_paths(value: Any, prefix: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    """The paths of the maps in `value` (a zero object), as field paths."""
    out: set[tuple[Any, ...]] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict):
                path = (*prefix, (0, k))
                out.add(path)
                out |= map_paths(v, path)
    return out


_roots: dict[tuple[str, int], tuple[Any, Type]] = {}


def _memo_root(k: tuple[str, int], owner: Any, t: Type) -> Type:
    hit = _roots.get(k)
    if hit is not None and hit[0] is owner:
        return hit[1]
    _roots[k] = (owner, t)
    return t
