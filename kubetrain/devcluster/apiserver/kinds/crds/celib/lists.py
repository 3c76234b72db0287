"""The Kubernetes CEL lists library (k8s.io/apiserver pkg/cel/library/lists.go, version 0 as
kube-apiserver 1.36 declares it): `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on
lists; and cel-go's strings extension (ext/strings.go, version 2) `indexOf` / `lastIndexOf` on
strings, which share the names.

```
[1, 2, 3].isSorted()    // true          ['b', 'a'].isSorted()  // false
[1, 2].sum()            // 3             [].min()               // error "min called on empty list"
[1, 2, 3, 2].lastIndexOf(2)   // 3       'hello'.indexOf('l', 3)  // 3
```
Upstream type-checks a list's element type; a dynamically typed list of values with no order
between them (`[1, 'a'].isSorted()`) compares as cel-go's `Compare` does at runtime (an error
result, ignored). The `sum` of an empty list is the int 0, where upstream answers the zero of the
list's declared element type (0.0 for a list of doubles, which CEL's equality treats as 0).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.kinds.crds.celib.values import (
    INT64,
    UINT64,
    comparable,
    compare,
    equal,
    error,
    no_overload,
)


def _items(val: Any) -> list[Any]:
    if not isinstance(val, list):
        no_overload(val)
    for item in val:
        if not comparable(item):
            no_overload(item)
    return list(val)


def is_sorted(val: Any) -> Any:
    """`isSorted`: false at the first element its predecessor compares greater than."""
    items = _items(val)
    return ct.BoolType(all(compare(a, b) != 1 for a, b in itertools.pairwise(items)))


def _extreme(name: str, prefer: int) -> Callable[[Any], Any]:
    def pick(val: Any) -> Any:
        items = _items(val)
        if not items:
            return error(f"{name} called on empty list")
        result = items[0]
        for item in items[1:]:
            if compare(result, item) == prefer:
                result = item
        return result

    return pick


list_min = _extreme("min", 1)
list_max = _extreme("max", -1)


def list_sum(val: Any) -> Any:
    """`sum`: the elements added in order, as `+` adds them (integer overflow is an error)."""
    if not isinstance(val, list):
        no_overload(val)
    if not val:
        return ct.IntType(0)
    kind = type(val[0])
    if kind not in (ct.IntType, ct.UintType, ct.DoubleType, ct.DurationType):
        no_overload(val[0])
    total: Any = val[0]
    for item in val[1:]:
        if type(item) is not kind:
            no_overload(item)
        if kind is ct.IntType:
            n = int(total) + int(item)
            if not INT64[0] <= n <= INT64[1]:
                return error("integer overflow")
            total = ct.IntType(n)
        elif kind is ct.UintType:
            n = int(total) + int(item)
            if n > UINT64:
                return error("unsigned integer overflow")
            total = ct.UintType(n)
        else:
            total = kind(total + item)
    return total


def _runes_index(s: str, sub: str, start: int, step: int, stop: int) -> int:
    for i in range(start, stop, step):
        if s[i : i + len(sub)] == sub:
            return i
    return -1


def index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, str) and isinstance(item, str):
        off = 0 if offset is None else int(offset)
        if offset is not None and not isinstance(offset, ct.IntType):
            no_overload(offset)
        if item == "":
            return ct.IntType(off)
        if off < 0 or off >= len(target):
            return error(f"index out of range: {off}")
        return ct.IntType(_runes_index(target, item, off, 1, len(target) - (len(item) - 1)))
    if not isinstance(target, list) or offset is not None:
        return no_overload(target)
    return ct.IntType(next((i for i, v in enumerate(target) if equal(v, item)), -1))


def last_index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, str) and isinstance(item, str):
        if offset is not None and not isinstance(offset, ct.IntType):
            no_overload(offset)
        if item == "":
            return ct.IntType(len(target) if offset is None else int(offset))
        off = len(target) - 1 if offset is None else int(offset)
        if off < 0 or off >= len(target):
            return error(f"index out of range: {off}")
        off = min(off, len(target) - len(item))
        return ct.IntType(_runes_index(target, item, off, -1, -1))
    if not isinstance(target, list) or offset is not None:
        return no_overload(target)
    found = [i for i, v in enumerate(target) if equal(v, item)]
    return ct.IntType(found[-1] if found else -1)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "isSorted": is_sorted,
    "sum": list_sum,
    "min": list_min,
    "max": list_max,
    "indexOf": index_of,
    "lastIndexOf": last_index_of,
}
