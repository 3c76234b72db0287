"""The uniqueness of `x-kubernetes-list-type: map` and `set` lists in a custom resource, as
apiextensions-apiserver checks it (pkg/apiserver/schema/listtype/validation.go,
`ValidateListSetsAndMaps`): a map list's items must differ in their `x-kubernetes-list-map-keys`
(an item without a key counts as one more value), a set's items must differ. Each value that
occurs more than once is reported once, at its second occurrence, with upstream's wording:
`spec.env[1]: Duplicate value: {"name":"x"}` (map list: the item's keys; `{}` for a missing
key), `spec.names[2]: Duplicate value: "x"` (set); values print as `field.Error` prints them
(fielderrors.go_value: JSON for objects and lists since Kubernetes 1.34). An item of a map list
that is no object is refused (`Invalid value: …: must be an object for an array of list-type
map`) and its list not compared further.

`write_causes` is when the custom-resource strategies run it (pkg/registry/customresource
strategy.go `Validate` / `ValidateUpdate`, status_strategy.go `ValidateUpdate`): on create
always; on update (spec or status) only when the stored object passes it (ratcheting: an object
stored before its CRD gained the list type can still be updated). The errors are not blocking:
the CEL rules are evaluated after them (`hasBlockingErr`).
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe

_UNSPECIFIED = ("unspecified",)  # upstream's unspecifiedKeyValue: an item without the key


def write_causes(schema: Obj, obj: Obj, old: Obj | None) -> list[Cause]:
    """The list-type causes of a create (`old` None) or an update, with upstream's ratcheting."""
    if old is not None and causes(schema, old):
        return []
    return causes(schema, obj)


def causes(schema: Obj, obj: Any, path: str = "") -> list[Cause]:
    """`ValidateListSetsAndMaps(nil, schema, obj)`."""
    out: list[Cause] = []
    if isinstance(obj, dict):
        _object(schema, obj, path, out)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _object(s: Obj, obj: dict[str, Any], path: str, out: list[Cause]) -> None:
    additional = s.get("additionalProperties")
    if isinstance(additional, dict):
        for k, v in obj.items():
            _value(additional, v, f"{path}[{k}]", out)
    props = s.get("properties")
    if isinstance(props, dict):
        for k, v in obj.items():
            if k in props:
                _value(props[k], v, _join(path, k), out)


def _value(s: Obj, obj: Any, path: str, out: list[Cause]) -> None:
    if isinstance(obj, list):
        _array(s, obj, path, out)
    elif isinstance(obj, dict):
        _object(s, obj, path, out)


def _array(s: Obj, obj: list[Any], path: str, out: list[Cause]) -> None:
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "set":
        out += [_duplicate(f"{path}[{i}]", obj[i]) for i in _non_unique(obj)]
    elif list_type == "map":
        out += _map_list(s, obj, path)
    items = s.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(obj):
            _value(items, item, f"{path}[{i}]", out)


def _map_list(s: Obj, obj: list[Any], path: str) -> list[Cause]:
    """`validateListMap`."""
    for i, x in enumerate(obj):
        if x is not None and not isinstance(x, dict):
            return [fe.invalid(f"{path}[{i}]", x, "must be an object for an array of list-type map")]
    if len(obj) <= 1:
        return []
    key_fields = [str(k) for k in s.get("x-kubernetes-list-map-keys") or []]
    if len(key_fields) == 1:
        field = key_fields[0]
        keys: list[Any] = [x[field] if isinstance(x, dict) and field in x else _UNSPECIFIED for x in obj]
        return [
            _duplicate(f"{path}[{i}]", {} if keys[i] is _UNSPECIFIED else {field: keys[i]})
            for i in _non_unique(keys)
        ]
    composite = [{k: x[k] for k in key_fields if k in x} if isinstance(x, dict) else {} for x in obj]
    return [_duplicate(f"{path}[{i}]", composite[i]) for i in _non_unique(composite)]


def _non_unique(values: list[Any]) -> list[int]:
    """`validateListSet`: the index of each value's second occurrence."""
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, x in enumerate(values):
        k = _identity(x)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] == 2:
            out.append(i)
    return out


def _identity(x: Any) -> Any:
    """What Go compares: scalars as interface values (an int64 is not the float64 of the same
    number, nor a bool a number), objects and lists by their JSON encoding (`json.Marshal`: keys
    sorted, 1.0 written as 1)."""
    if x is _UNSPECIFIED:
        return x
    if isinstance(x, (dict, list)):
        return ("json", fe.go_json(x))
    return (type(x).__name__, x)


def _duplicate(path: str, value: Any) -> Cause:
    """`field.Duplicate(path, value)` as `ErrorBody` prints it."""
    return Cause("FieldValueDuplicate", f"Duplicate value: {fe.go_value(value)}", path)
