"""Field paths and field sets as sigs.k8s.io/structured-merge-diff's `fieldpath` package has them,
and their `FieldsV1` encoding in `metadata.managedFields`.

A path element is a tuple `(kind, data)` ordered as upstream's `PathElement.Compare` orders them:
a field name (`FIELD`, the name), an associative list item's keys (`KEY`, a tuple of
`(name, JSON value)` pairs sorted by name), a set item's value (`VALUE`, its JSON) or a list
index (`INDEX`). A path is a tuple of elements, a set is a Python set of paths: upstream's
`Set.Insert(path)` makes only `path` a member, so a set of paths is the same thing.

```python
encode({(f("spec"), f("replicas"))})              # {"f:spec": {"f:replicas": {}}}
decode({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
text((f("spec"), key({"name": "c"}), f("image")))  # '.spec[name="c"].image'
```
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

FIELD, KEY, VALUE, INDEX = 0, 1, 2, 3

Element = tuple[int, Any]
Path = tuple[Element, ...]
FieldSet = set[Path]


def _json(value: Any) -> str:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return _scalar_json(type(value).__name__, value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


@lru_cache(maxsize=8192)
def _scalar_json(_type: str, value: Any) -> str:  # the type keeps 1, 1.0 and True apart
    return json.dumps(value, ensure_ascii=False)


def f(name: str) -> Element:
    return (FIELD, name)


def key(fields: dict[str, Any]) -> Element:
    return (KEY, tuple(sorted((k, _json(v)) for k, v in fields.items())))


def val(value: Any) -> Element:
    return (VALUE, _json(value))


def index(i: int) -> Element:
    return (INDEX, i)


def element_string(pe: Element) -> str:
    """`PathElement.String` (fieldpath/element.go): `.name`, `[k=v,...]`, `[=v]`, `[i]`."""
    kind, data = pe
    if kind == FIELD:
        return "." + str(data)
    if kind == KEY:
        return "[" + ",".join(f"{k}={v}" for k, v in data) + "]"
    if kind == VALUE:
        return f"[={data}]"
    return f"[{data}]"


def text(path: Path) -> str:
    """`Path.String`: the elements' strings joined (`.spec.containers[name="c"].image`)."""
    return "".join(element_string(pe) for pe in path)


@lru_cache(maxsize=8192)
def serialize(pe: Element) -> str:
    """serialize-pe.go: `f:name`, `k:{"name":"c"}`, `v:"x"`, `i:0`."""
    kind, data = pe
    if kind == FIELD:
        return "f:" + str(data)
    if kind == KEY:
        return "k:{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in data) + "}"
    if kind == VALUE:
        return "v:" + str(data)
    return f"i:{data}"


class FieldsError(ValueError):
    """A `fieldsV1` that does not decode (upstream `FieldsToSet` fails)."""


@lru_cache(maxsize=8192)
def _deserialize(s: str) -> Element:
    prefix, _, rest = s.partition(":")
    try:
        if prefix == "f":
            return (FIELD, rest)
        if prefix == "k":
            fields = json.loads(rest)
            if not isinstance(fields, dict):
                raise FieldsError(f"expected key value pairs but got {rest}")
            return key(fields)
        if prefix == "v":
            return (VALUE, _json(json.loads(rest)))
        if prefix == "i":
            return (INDEX, int(rest))
    except (json.JSONDecodeError, ValueError) as exc:
        raise FieldsError(f"parsing error: {exc}") from None
    raise FieldsError(f"unknown path element type: {prefix!r}")


def encode(fields: FieldSet) -> dict[str, Any]:
    """`Set.ToJSON` (fieldpath/serialize.go `emitContentsV1`): a member that also has children
    gets a `.` entry; elements in `PathElement.Compare` order."""
    trie: dict[Element, Any] = {}
    members_here: set[Element] = set()
    for path in fields:
        node, members = trie, members_here
        for depth, pe in enumerate(path):
            if depth == len(path) - 1:
                members.add(pe)
                node.setdefault(pe, {})
            else:
                child = node.setdefault(pe, {})
                node = child
                members = node.setdefault(_MEMBERS, set())
    return _emit(trie, members_here, include_self=False)


_MEMBERS: Any = (-1, "")  # where a trie node keeps its members (never a path element)


def _emit(node: dict[Element, Any], members: set[Element], include_self: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    children = sorted(pe for pe in node if pe != _MEMBERS)
    if include_self and children:
        out["."] = {}
    for pe in children:
        child = node[pe]
        grandchildren = [c for c in child if c != _MEMBERS]
        if not grandchildren:
            out[serialize(pe)] = {}
        else:
            out[serialize(pe)] = _emit(child, child.get(_MEMBERS, set()), include_self=pe in members)
    return out


def decode(fields_v1: Any) -> FieldSet:
    """`FieldsToSet`: the set a `fieldsV1` stands for; `FieldsError` when it does not decode."""
    if not isinstance(fields_v1, dict):
        raise FieldsError("expected an object")
    out: FieldSet = set()
    _collect(fields_v1, (), out)
    return out


def _collect(node: dict[str, Any], prefix: Path, out: FieldSet) -> None:
    for k, child in node.items():
        if k == ".":
            out.add(prefix)
            continue
        if not isinstance(child, dict):
            raise FieldsError(f"expected an object at {k}")
        path = (*prefix, _deserialize(k))
        if not child:
            out.add(path)
        else:
            _collect(child, path, out)


def contains(fields_v1: dict[str, Any], path: Path) -> bool:
    """Whether `path` is a member of the set `fields_v1` encodes, without decoding it."""
    node: Any = fields_v1
    for pe in path:
        node = node.get(serialize(pe)) if isinstance(node, dict) else None
        if node is None:
            return False
    return isinstance(node, dict) and (not node or "." in node)


def edit(fields_v1: dict[str, Any], add: FieldSet, remove: FieldSet) -> dict[str, Any]:
    """`encode(decode(fields_v1) - remove | add)` without decoding: the nodes on the edited
    paths are copied (the rest shared), a node that gains a key is put back in upstream's
    order."""
    out = fields_v1
    for path in remove:
        if path:
            out = _without(out, path)
    for path in add:
        if path:
            out = _with(out, path)
    return out


def _order(node: dict[str, Any]) -> dict[str, Any]:
    keys = sorted((k for k in node if k != "."), key=_deserialize)
    head: dict[str, Any] = {".": {}} if "." in node else {}
    return {**head, **{k: node[k] for k in keys}}


def _with(node: dict[str, Any], path: Path) -> dict[str, Any]:
    k = serialize(path[0])
    child = node.get(k)
    new = dict(node)
    if len(path) == 1:
        if child is None:
            new[k] = {}
        elif child and "." not in child:
            new[k] = {".": {}, **child}
        else:
            return node
    else:
        sub = {} if child is None else (child or {".": {}})
        new[k] = _with(sub, path[1:])
    return _order(new) if child is None else new


def _without(node: dict[str, Any], path: Path) -> dict[str, Any]:
    k = serialize(path[0])
    child = node.get(k)
    if child is None:
        return node
    new = dict(node)
    if len(path) == 1:
        if not child:
            del new[k]
        elif "." in child:
            new[k] = {c: v for c, v in child.items() if c != "."}
        else:
            return node
        return new
    if not child:
        return node
    sub = _without(child, path[1:])
    if sub is child:
        return node
    if not sub:
        del new[k]
    elif sub == {".": {}}:
        new[k] = {}
    else:
        new[k] = sub
    return new


def recursive_difference(fields: FieldSet, remove: FieldSet) -> FieldSet:
    """`Set.RecursiveDifference`: the paths of `fields` with neither themselves nor a prefix in
    `remove`."""
    if not remove:
        return set(fields)
    return {p for p in fields if not any(p[:n] in remove for n in range(len(p) + 1))}


def has_prefix_in(path: Path, prefixes: FieldSet) -> bool:
    return any(path[:n] in prefixes for n in range(len(path) + 1))
