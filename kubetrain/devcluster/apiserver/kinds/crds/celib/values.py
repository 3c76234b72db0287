"""CEL value semantics the library functions share, as cel-go's types define them: equality
(heterogeneous: numbers compare by value across int, uint and double; other types never equal
one another) and ordering (`traits.Comparer`), over celpy's value types.

`compare(a, b)` is -1, 0 or 1, or None where cel-go's `Compare` answers an error (values of
types with no order between them); `equal(a, b)` is cel-go's `Equal`.
"""

from __future__ import annotations

from typing import Any

import celpy.celtypes as ct
from celpy.evaluation import CELEvalError

INT64 = (-(2**63), 2**63 - 1)
UINT64 = 2**64 - 1


def error(message: str) -> Any:
    """A CEL runtime error (`types.NewErr`): `<message> evaluating rule: <rule>` in the cause."""
    return CELEvalError(message)


def no_overload(*_args: Any) -> Any:
    """`types.MaybeNoSuchOverloadErr`: celpy words a TypeError as `no such overload`."""
    raise TypeError("no such overload")


def _number(v: Any) -> bool:
    return isinstance(v, (ct.IntType, ct.UintType, ct.DoubleType)) and not isinstance(v, ct.BoolType)


def _ordered(a: Any, b: Any) -> bool:
    if _number(a) and _number(b):
        return True
    for kind in (ct.BoolType, ct.StringType, ct.BytesType, ct.DurationType, ct.TimestampType):
        if isinstance(a, kind) and isinstance(b, kind):
            return True
    return False


def compare(a: Any, b: Any) -> int | None:
    if not _ordered(a, b):
        return None
    if a != a or b != b:  # NaN is ordered against nothing (Double.Compare answers an error)
        return None
    return -1 if a < b else (1 if a > b else 0)


def comparable(v: Any) -> bool:
    """`traits.Comparer`: the types with an order."""
    return _ordered(v, v)


def equal(a: Any, b: Any) -> bool:
    if _number(a) and _number(b):
        if isinstance(a, ct.DoubleType) or isinstance(b, ct.DoubleType):
            return float(a) == float(b)
        return int(a) == int(b)
    if isinstance(a, ct.BoolType) or isinstance(b, ct.BoolType):
        return isinstance(a, ct.BoolType) and isinstance(b, ct.BoolType) and bool(a) == bool(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return a is None and b is None
    try:
        return bool(a == b)
    except TypeError:
        return False
