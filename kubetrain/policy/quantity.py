"""Kubernetes resource quantities (`resource.Quantity`), parsed exactly as fractions.

Grammar (k8s.io/apimachinery/pkg/api/resource)::

    <quantity>        ::= <signedNumber><suffix>
    <numeric>         ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

Arithmetic uses `fractions.Fraction`, so `100m` + `900m` is exactly `1` and `1Gi` is exactly
1073741824: no float rounding can let a job slip past a limit.
"""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))$"
)


class QuantityError(ValueError):
    """The string is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity given as a string (`"500m"`, `"16Gi"`) or a number."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    text = value.strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(
            f"{value!r} is not a quantity: must be a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3)"
        )
    number = Fraction(match["num"])
    if match["bin"]:
        return number * _BINARY[match["bin"]]
    if match["exp"] is not None:
        return number * Fraction(10) ** int(match["exp"])
    return number * _DECIMAL[match["dec"] or ""]


def is_binary(value: object) -> bool:
    """Whether the quantity is written with a binary suffix (Ki, Mi, …)."""
    return isinstance(value, str) and value.strip()[-2:] in _BINARY


def format_quantity(value: Fraction, *, binary: bool = False) -> str:
    """A canonical string for an exact value, in the style Kubernetes prints quantities.

    Integers take the largest suffix that divides them exactly (binary suffixes when `binary`
    is true, e.g. `80Gi`; decimal ones otherwise, e.g. `2k`); fractions are printed in
    milli/micro/nano units (`1500m`), rounded up to whole nano units if finer still.
    """
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value.denominator == 1:
        whole = value.numerator
        if whole == 0:
            return "0"
        suffixes: list[tuple[str, int]] = (
            [(s, m) for s, m in reversed(_BINARY.items())]
            if binary
            else [(s, int(m)) for s, m in reversed(_DECIMAL.items()) if m >= 1000]
        )
        for suffix, multiple in suffixes:
            if whole % multiple == 0:
                return f"{sign}{whole // multiple}{suffix}"
        return f"{sign}{whole}"
    for suffix in ("m", "u"):
        scaled = value / _DECIMAL[suffix]
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    nanos = value / _DECIMAL["n"]
    ceil = -(-nanos.numerator // nanos.denominator)
    return f"{sign}{ceil}n"
