"""Typed values as structured-merge-diff's `typed` package walks them: the field set of a value
(tofieldset.go), the comparison of two (compare.go), the merge of an applied configuration into
a live object (merge.go, rule "keep RHS") and the removal of a field set (remove.go).

```python
fields = to_field_set(obj, t)                    # {(f("spec"), f("replicas")), ...}
added, modified, removed = compare(old, new, t)
merged = merge(live, applied, t)
pruned = remove_items(merged, {(f("spec"), f("paused"))}, t)
```

Values are JSON values (dicts, lists, scalars); an absent value is `ABSENT` (upstream's nil),
distinct from JSON `null`. Types come from smdschema.py.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.kinds.fieldpaths import Element, FieldSet, Path, f, key, serialize, val
from kubetrain.devcluster.apiserver.kinds.smdschema import (
    ATOMIC,
    DEDUCED_KIND,
    LIST,
    MAP,
    Type,
    field_type,
    key_defaults,
    resolve,
)


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


def _shape(v: Any, t: Type) -> str:
    """How a value of type `t` is walked: "map", "list" (associative or set) or "leaf"."""
    kind = t.kind
    if kind == DEDUCED_KIND:
        return "map" if isinstance(v, dict) else "leaf"
    if kind == MAP:
        return "map"
    if kind == LIST:
        return "list"
    return "leaf"


def item_element(t: Type, item: Any, defaults: dict[str, Any] | None = None) -> Element:
    """`listItemToPathElement`: an associative item's key fields, a set item's value."""
    if t.relationship == "associative" and isinstance(item, dict):
        fields = {}
        for k in t.keys:
            if k in item:
                fields[k] = item[k]
            elif defaults and k in defaults:
                fields[k] = defaults[k]
        return key(fields)
    return val(item)


def _elements(t: Type, items: Any) -> list[tuple[Element, Any]]:
    if not isinstance(items, list):
        return []
    defaults = key_defaults(t) if t.relationship == "associative" else None
    return [(item_element(t, item, defaults), item) for item in items]


# ---- ToFieldSet -----------------------------------------------------------------------------
def to_field_set(value: Any, t: Type) -> FieldSet:
    out: FieldSet = set()
    _tfs(value, t, (), out)
    return out


def _tfs(v: Any, t: Type, path: Path, out: FieldSet) -> None:
    shape = _shape(v, t)
    if shape == "leaf":
        out.add(path)
    elif shape == "map":
        if not isinstance(v, dict):
            return
        for k, child in v.items():
            ct, declared = field_type(t, k)
            cp = (*path, f(k))
            _tfs(child, ct, cp, out)
            if child is None or child == {} or not declared:
                out.add(cp)
    else:
        pairs = _elements(t, v)
        counts: dict[Element, int] = {}
        for pe, _ in pairs:
            counts[pe] = counts.get(pe, 0) + 1
        elem = resolve(t.elem)
        for pe, item in pairs:
            ip = (*path, pe)
            if counts[pe] == 1:
                _tfs(item, elem, ip, out)
            out.add(ip)


# ---- Compare --------------------------------------------------------------------------------
def compare(lhs: Any, rhs: Any, t: Type) -> tuple[FieldSet, FieldSet, FieldSet]:
    """(added, modified, removed) from `lhs` to `rhs`, as `TypedValue.Compare`."""
    added: FieldSet = set()
    modified: FieldSet = set()
    removed: FieldSet = set()
    _cmp(lhs, rhs, t, (), (added, modified, removed))
    return added, modified, removed


def _empty(v: Any) -> bool:
    return v is ABSENT or v is None or v == {} or v == []


def _cmp(lhs: Any, rhs: Any, t: Type, path: Path, out: tuple[FieldSet, FieldSet, FieldSet]) -> None:
    if lhs is rhs or (type(lhs) is type(rhs) and lhs == rhs):
        return  # equal subtrees (compared in C) have nothing added, modified or removed
    added, modified, removed = out
    shape = _shape(rhs if rhs is not ABSENT else lhs, t)
    leaf = shape == "leaf" or (_empty(lhs) and _empty(rhs))
    if (
        shape == "map"
        and not leaf
        and not (isinstance(lhs, (dict, _Absent)) and isinstance(rhs, (dict, _Absent)))
    ):
        leaf = True
    if (
        shape == "list"
        and not leaf
        and not (isinstance(lhs, (list, _Absent)) and isinstance(rhs, (list, _Absent)))
    ):
        leaf = True
    if leaf:
        if lhs is ABSENT:
            added.add(path)
        elif rhs is ABSENT:
            removed.add(path)
        elif lhs != rhs:
            modified.add(path)
        return
    if shape == "map":
        lm = lhs if isinstance(lhs, dict) else {}
        rm = rhs if isinstance(rhs, dict) else {}
        for k in {**lm, **rm}:
            ct, _ = field_type(t, k)
            _cmp(lm.get(k, ABSENT), rm.get(k, ABSENT), ct, (*path, f(k)), out)
    else:
        _cmp_list(lhs, rhs, t, path, out)
    if lhs is ABSENT:
        added.add(path)
    elif rhs is ABSENT:
        removed.add(path)


def _group(pairs: list[tuple[Element, Any]]) -> dict[Element, list[Any]]:
    out: dict[Element, list[Any]] = {}
    for pe, item in pairs:
        out.setdefault(pe, []).append(item)
    return out


def _cmp_list(lhs: Any, rhs: Any, t: Type, path: Path, out: tuple[FieldSet, FieldSet, FieldSet]) -> None:
    added, modified, removed = out
    lv = _group(_elements(t, lhs if lhs is not ABSENT else []))
    rv = _group(_elements(t, rhs if rhs is not ABSENT else []))
    elem = resolve(t.elem)
    for pe in {**lv, **rv}:
        ll, rl = lv.get(pe, []), rv.get(pe, [])
        ip = (*path, pe)
        if len(ll) <= 1 and len(rl) <= 1:
            _cmp(ll[0] if ll else ABSENT, rl[0] if rl else ABSENT, elem, ip, out)
        elif len(ll) >= 2 and len(rl) >= 2:
            if ll != rl:
                modified.add(ip)
        elif len(ll) >= 2:
            if rl:
                _cmp(ABSENT, rl[0], elem, ip, out)
            removed.add(ip)
        else:
            if ll:
                _cmp(ll[0], ABSENT, elem, ip, out)
            added.add(ip)


def added_fields_v1(value: Any, t: Type) -> dict[str, Any]:
    """The FieldsV1 encoding of `compare({}, value, t)`'s added set, built directly (what a create
    takes): every map key and list item is a member, each with its children."""
    shape = _shape(value, t)
    out: dict[str, Any] = {}
    if shape == "map" and isinstance(value, dict):
        for k in sorted(value):
            ct, _ = field_type(t, k)
            sub = added_fields_v1(value[k], ct)
            out["f:" + k] = {".": {}, **sub} if sub else {}
    elif shape == "list" and isinstance(value, list):
        groups = _group(_elements(t, value))
        elem = resolve(t.elem)
        for pe in sorted(groups):
            items = groups[pe]
            sub = added_fields_v1(items[0], elem) if len(items) == 1 else {}
            out[serialize(pe)] = {".": {}, **sub} if sub else {}
    return out


# ---- Merge ----------------------------------------------------------------------------------
def merge(lhs: Any, rhs: Any, t: Type) -> Any:
    """`TypedValue.Merge`: `rhs` (an applied configuration) over `lhs` (the live object)."""
    if rhs is ABSENT:
        return lhs
    if lhs is ABSENT:
        return copy.deepcopy(rhs)
    shape = _shape(rhs, t)
    if shape == "map" and isinstance(lhs, dict) and isinstance(rhs, dict):
        result = dict(lhs)
        for k, rchild in rhs.items():
            ct, _ = field_type(t, k)
            result[k] = merge(lhs.get(k, ABSENT), rchild, ct)
        return result
    if shape == "list" and isinstance(lhs, list) and isinstance(rhs, list):
        return _merge_list(lhs, rhs, t)
    return copy.deepcopy(rhs)


def _merge_list(lhs: list[Any], rhs: list[Any], t: Type) -> list[Any]:
    """merge.go `visitListItems`: the order of the live list, with the applied items in the
    applied order and new applied items placed after the shared item before them."""
    elem = resolve(t.elem)
    rpairs = _elements(t, rhs)
    lpairs = _elements(t, lhs)
    r_obs: dict[Element, Any] = {}
    for pe, item in rpairs:
        r_obs.setdefault(pe, item)
    l_obs: dict[Element, Any] = {}
    for pe, item in lpairs:
        l_obs.setdefault(pe, item)
    rpes = list(dict.fromkeys(pe for pe, _ in rpairs))
    lpes = list(dict.fromkeys(pe for pe, _ in lpairs))
    shared = [pe for pe in rpes if pe in l_obs]
    next_shared = shared.pop(0) if shared else None
    merged_rhs: set[Element] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(lpes) or ri < len(rpes):
        if li < len(lpes) and ri < len(rpes):
            pe = lpes[li]
            if pe == rpes[ri]:
                merged_rhs.add(pe)
                out.append(merge(l_obs[pe], r_obs[pe], elem))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in r_obs and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(lpes):
            pe = lpes[li]
            if pe not in r_obs:
                out.append(l_obs[pe])
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
        if ri < len(rpes):
            pe = rpes[ri]
            merged_rhs.add(pe)
            out.append(merge(l_obs.get(pe, ABSENT), r_obs[pe], elem))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


# ---- RemoveItems ----------------------------------------------------------------------------
def remove_items(value: Any, fields: FieldSet, t: Type) -> Any:
    """`TypedValue.RemoveItems`: `value` without the members of `fields` (a removed map or list
    item takes its children along). An associative item that stays keeps its key fields."""
    prefixes = {p[:n] for p in fields for n in range(len(p))}
    return _remove(value, fields, prefixes, t, (), ())


def _remove(v: Any, fields: FieldSet, prefixes: set[Path], t: Type, path: Path, keep: tuple[str, ...]) -> Any:
    if path not in prefixes:
        return v
    shape = _shape(v, t)
    if shape == "map" and isinstance(v, dict):
        out = {}
        for k, child in v.items():
            cp = (*path, f(k))
            if cp in fields and k not in keep:
                continue
            ct, _ = field_type(t, k)
            out[k] = _remove(child, fields, prefixes, ct, cp, ())
        return out
    if shape == "list" and isinstance(v, list) and t.kind != ATOMIC:
        elem = resolve(t.elem)
        keys = t.keys if t.relationship == "associative" else ()
        kept = []
        for pe, item in _elements(t, v):
            ip = (*path, pe)
            if ip in fields:
                continue
            kept.append(_remove(item, fields, prefixes, elem, ip, keys))
        return kept
    return v
