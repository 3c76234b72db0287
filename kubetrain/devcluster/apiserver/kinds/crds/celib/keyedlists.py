"""CEL values of `x-kubernetes-list-type: set` and `map` lists, with kube-apiserver's equality and
`+` (k8s.io/apiserver pkg/cel/common valuesunstructured.go `unstructuredSetList` /
`unstructuredMapList`, and valuesreflect.go `addToSetList`, `addToMapList`, `setElementKey`,
`refValMapKey`, `refValSetList`, `refValMapList` for the results of `+`):

- `set == list`: false when the sizes differ; else true when every element of the right is in
  the left and together they name every element of the left, in any order (`[1, 2] == [2, 1]`,
  `[1, 2, 3] != [1, 1, 3]`). Elements compare by type and value (`setElementKey`: the Go value,
  so the int 1 and the double 1.0 differ); an element that is a list or map is the error
  `listSet operations are only supported on lists of scalar values`.
- `map == list`: sizes first; then each element of the right is matched to the left's element
  with the same `x-kubernetes-list-map-keys` values (a missing key is null) and must equal it;
  true when every key of the left was matched, in any order.
- `set + list`: the left in its order, then each element of the right not yet in it (a union);
  `map + list`: the left in its order with an element of the right replacing the left's of the
  same keys in place, the others appended. The result keeps its list type (a merged set still
  compares in any order).
- Any other list (atomic, or no list type) compares in order and `+` concatenates.

Which semantics apply is decided by the left operand, as cel-go's `Equal` / `Add` are the left
value's methods: `[2, 1] == self.setList` compares in order. Module functions `eq`, `ne` and
`add` are the `_==_`, `_!=_` and `_+_` operators devcluster gives celpy. **Limits:** equality of
two values nested in other values (a set list inside a literal list) uses Python's `==`, where a
set or map list on the right of an atomic one is compared as the set or map list; and a map
list read from the object matches the right's elements by key also when the right is a literal
list, or when a key's name is one CEL escapes (`if`, `a.b`), where kube-apiserver's
`unstructuredMapList.Equal` finds no literal element's key (false) and reads an escaped key as
absent (null).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Hashable, Iterable
from typing import Any

import celpy.celtypes as ct
from celpy.evaluation import CELEvalError, bool_eq

from kubetrain.devcluster.apiserver.kinds.crds.celib.values import error

SCALARS_ONLY = "listSet operations are only supported on lists of scalar values"


class _Error(Exception):
    """An error result inside the comparison (`ref.Val` error), answered as a CEL error."""


def _scalar(value: Any) -> Hashable:
    """A hashable key for a scalar as Go compares its raw value: by type and value."""
    if isinstance(value, (list, dict)):
        return ("composite", repr(value))  # refValMapKey: `%#v` of a non-comparable value
    if isinstance(value, float) and math.isnan(value):
        return object()  # NaN is never equal to a key, not even itself
    if isinstance(value, bool):
        return ("bool", bool(value))
    name = type(value).__name__
    if isinstance(value, int):
        return (name, int(value))
    if isinstance(value, float):
        return (name, float(value))
    if isinstance(value, str):
        return (name, str(value))
    if isinstance(value, bytes):
        return (name, bytes(value))
    try:
        hash(value)
    except TypeError:
        return ("other", repr(value))
    return (name, value)


def _set_key(value: Any) -> Hashable:
    """`setElementKey`."""
    if isinstance(value, (list, dict)):
        raise _Error(SCALARS_ONLY)
    return _scalar(value)


def _equal(a: Any, b: Any) -> bool:
    """`a.Equal(b)` for elements: a keyed list decides by its own rule, other values by `==`."""
    if isinstance(a, _KeyedList):
        return a.equals(b)
    return bool(a == b)


class _KeyedList(ct.ListType):
    """What both keyed lists share: `==` and `!=` by their own `equals` rule, and no hash."""

    def equals(self, other: Any) -> bool:
        raise NotImplementedError

    def __eq__(self, other: Any) -> bool:
        return other is not None and _or_type_error(self.equals, other)

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]


class SetList(_KeyedList):
    """A list of `x-kubernetes-list-type: set`."""

    def equals(self, other: Any) -> bool:
        """`unstructuredSetList.Equal`; raises _Error for a non-scalar element."""
        if not isinstance(other, list):
            raise TypeError("no such overload")
        if len(self) != len(other):
            return False
        mine = {_set_key(v) for v in self}
        seen: set[Hashable] = set()
        for v in other:
            k = _set_key(v)
            if k not in mine:
                return False
            seen.add(k)
        return len(seen) == len(mine)

    def plus(self, other: Any) -> SetList:
        """`addToSetList`: a union keeping the left's order, then the right's new elements."""
        if not isinstance(other, list):
            raise TypeError("no such overload")
        out = SetList(self)
        keys = {_set_key(v) for v in self}
        for v in other:
            k = _set_key(v)
            if k not in keys:
                keys.add(k)
                out.append(v)
        return out


class MapList(_KeyedList):
    """A list of `x-kubernetes-list-type: map`, keyed by its `x-kubernetes-list-map-keys`."""

    def __init__(self, items: Iterable[Any] = (), keys: Iterable[str] = ()) -> None:
        super().__init__(items)
        self.keys = tuple(keys)

    def key(self, element: Any) -> Hashable:
        """`refValMapKey`: the element's key values (null where absent)."""
        if not isinstance(element, dict):
            return tuple(None for _ in self.keys)
        return tuple(
            None if element.get(ct.StringType(k)) is None else _scalar(element.get(ct.StringType(k)))
            for k in self.keys
        )

    def equals(self, other: Any) -> bool:
        """`unstructuredMapList.Equal` / `refValMapList.Equal`."""
        if not isinstance(other, list):
            raise TypeError("no such overload")
        if len(self) != len(other):
            return False
        mine = {self.key(v): v for v in self}
        seen: set[Hashable] = set()
        for v in other:
            k = self.key(v)
            if k not in mine or not _equal(mine[k], v):
                return False
            seen.add(k)
        return len(seen) == len(mine)

    def plus(self, other: Any) -> MapList:
        """`addToMapList`: the right's elements replace the left's of the same keys in place;
        the others are appended (not indexed: two of the right with one new key both append)."""
        if not isinstance(other, list):
            raise TypeError("no such overload")
        out = MapList(self, self.keys)
        index = {self.key(v): i for i, v in enumerate(self)}
        for v in other:
            at = index.get(self.key(v))
            if at is None:
                out.append(v)
            else:
                out[at] = v
        return out


def _or_type_error(compare: Any, other: Any) -> bool:
    try:
        return bool(compare(other))
    except _Error as err:  # nested under another value's `==`: celpy words it as an overload error
        raise TypeError(str(err)) from None


def of(list_type: str, items: Iterable[Any], keys: Iterable[str] = ()) -> Any:
    """The CEL value of a list of the schema's `x-kubernetes-list-type` (`UnstructuredToVal`)."""
    if list_type == "set":
        return SetList(items)
    if list_type == "map":
        return MapList(items, keys)
    return ct.ListType(items)


def eq(a: Any, b: Any) -> Any:
    """CEL `==`: the left operand's `Equal` (`types.Equal`: null equals only null)."""
    if isinstance(a, CELEvalError):
        return a
    if isinstance(b, CELEvalError):
        return b
    if isinstance(a, (SetList, MapList)):
        if b is None:
            return ct.BoolType(False)
        try:
            return ct.BoolType(a.equals(b))
        except _Error as err:
            return error(str(err))
    if isinstance(b, (SetList, MapList)) and isinstance(a, list):
        b = ct.ListType(b)  # the left is an atomic list: compared in order
    return bool_eq(a, b)


def ne(a: Any, b: Any) -> Any:
    """CEL `!=`: not `==`, an error staying the error."""
    result = eq(a, b)
    return result if isinstance(result, CELEvalError) else ct.BoolType(not result)


def add(a: Any, b: Any) -> Any:
    """CEL `+`: a set or map list on the left merges (`Add`); anything else is celpy's `+`."""
    if isinstance(a, (SetList, MapList)):
        try:
            return a.plus(b)
        except _Error as err:
            return error(str(err))
    return operator.add(a, b)
