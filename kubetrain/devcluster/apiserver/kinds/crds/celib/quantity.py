"""The Kubernetes CEL quantity library (k8s.io/apiserver pkg/cel/library/quantity.go) over
apimachinery's `resource.ParseQuantity` (pkg/api/resource/quantity.go `parseQuantityString`),
with exact arithmetic (`fractions.Fraction`).

```
quantity('500m').isLessThan(quantity('1'))      // true
quantity('1Gi').add(1).asInteger()              // 1073741825
isQuantity('1.5.5')                             // false
quantity('1.5').asInteger()                     // error "cannot convert value to integer"
```
Go's parser is more lenient than its documented grammar, and so is this one: "+", "-", "." and
"1." are 0, 0, 0 and 1. A value finer than 1n is rounded up (away from zero) to the next
nano; a binary-suffixed value is capped at 2^63-1. Two quantities are equal (`==`) when their
values are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.kinds.crds.celib.values import INT64, error, no_overload

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT = f"quantities must match the regular expression '{_SPLIT_RE}'"
ERR_SUFFIX = "unable to parse quantity's suffix"
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_NANO = 10**9


@dataclass(frozen=True, eq=False)
class Quantity:
    """A resource.Quantity: the CEL `Quantity` type."""

    value: Fraction

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


class QuantityError(ValueError):
    pass


def _split(s: str) -> tuple[bool, str, str, str]:
    """`parseQuantityString`: (positive, numerator digits, denominator digits, suffix)."""
    positive, pos, end = True, 0, len(s)
    if s[:1] in ("-", "+"):
        positive, pos = s[0] != "-", 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and s[pos].isascii() and s[pos].isdigit():
        pos += 1
    num, denom = s[start:pos] or "0", ""
    if pos < end and s[pos] == ".":
        pos += 1
        start = pos
        while pos < end and s[pos].isascii() and s[pos].isdigit():
            pos += 1
        denom = s[start:pos]
    suffix_start = pos
    while pos < end and s[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and s[pos] in "-+":
        pos += 1
    while pos < end and s[pos].isascii() and s[pos].isdigit():
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT)
    return positive, num, denom, s[suffix_start:]


def parse(s: str) -> Fraction:
    """`resource.ParseQuantity`'s value, or raise with its error."""
    if s == "":
        raise QuantityError(ERR_FORMAT)
    positive, num, denom, suffix = _split(s)
    amount = Fraction(int(num + denom), 10 ** len(denom))
    binary = suffix in _BINARY
    if binary:
        amount *= 2 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        amount *= Fraction(10) ** _DECIMAL[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE":
        try:
            exponent = int(suffix[1:], 10)
        except ValueError:
            raise QuantityError(ERR_SUFFIX) from None
        amount *= Fraction(10) ** exponent
    else:
        raise QuantityError(ERR_SUFFIX)
    nanos = amount * _NANO
    if nanos.denominator != 1:  # inf.RoundUp to 9 decimal places (amount is not negative yet)
        amount = Fraction(-(-nanos.numerator // nanos.denominator), _NANO)
    if binary and amount > INT64[1]:
        amount = Fraction(INT64[1])
    return amount if positive else -amount


def to_quantity(s: Any) -> Any:
    if not isinstance(s, str):
        return no_overload(s)
    try:
        return Quantity(parse(str(s)))
    except QuantityError as err:
        return error(str(err))


def is_quantity(s: Any) -> Any:
    if not isinstance(s, str):
        return no_overload(s)
    try:
        parse(str(s))
    except QuantityError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _q(v: Any) -> Fraction:
    if not isinstance(v, Quantity):
        no_overload(v)
    value: Fraction = v.value
    return value


def _operand(v: Any) -> Fraction:
    """A quantity, or an int as `resource.NewQuantity(i, DecimalExponent)`."""
    if isinstance(v, ct.IntType) and not isinstance(v, ct.BoolType):
        return Fraction(int(v))
    return _q(v)


def _cmp(a: Any, b: Any) -> int:
    x, y = _q(a), _q(b)
    return -1 if x < y else (1 if x > y else 0)


def _is_integer(v: Fraction) -> bool:
    """`AsInt64` succeeds: a whole number within int64."""
    return v.denominator == 1 and INT64[0] <= v <= INT64[1]


def as_integer(q: Any) -> Any:
    v = _q(q)
    if not _is_integer(v):
        return error("cannot convert value to integer")
    return ct.IntType(int(v))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": to_quantity,
    "isQuantity": is_quantity,
    "sign": lambda q: ct.IntType((_q(q) > 0) - (_q(q) < 0)),
    "isInteger": lambda q: ct.BoolType(_is_integer(_q(q))),
    "asInteger": as_integer,
    "asApproximateFloat": lambda q: ct.DoubleType(float(_q(q))),
    "compareTo": lambda a, b: ct.IntType(_cmp(a, b)),
    "isLessThan": lambda a, b: ct.BoolType(_cmp(a, b) == -1),
    "isGreaterThan": lambda a, b: ct.BoolType(_cmp(a, b) == 1),
    "add": lambda a, b: Quantity(_q(a) + _operand(b)),
    "sub": lambda a, b: Quantity(_q(a) - _operand(b)),
}
