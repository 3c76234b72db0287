"""Kubernetes resource quantities: parse, add, and print back (for PodGroup `minResources`).

Follows the apimachinery `resource.Quantity` grammar: a signed decimal number followed by a
binary SI suffix (Ki Mi Gi Ti Pi Ei), a decimal SI suffix (n u m "" k M G T P E) or a decimal
exponent (e3, E-2). Sums are exact (Fractions). A sum is printed with the suffix of its first
term when that is exact ("4Gi" + "4Gi" = "8Gi", "500m" + "1" = "1500m"), else as the shortest
exact form of an integer, milli or nano value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")


class QuantityError(ValueError):
    pass


def parse_quantity(value: object) -> tuple[Fraction, str]:
    """The exact value and the suffix it was written with ("" for none or an exponent)."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value), ""
    if isinstance(value, float):
        return Fraction(str(value)), ""
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    m = _QUANTITY.match(value.strip())
    if not m:
        raise QuantityError(f"{value!r} is not a quantity (e.g. 500m, 2, 16Gi)")
    number, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix], suffix
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix], suffix
    return number * Fraction(10) ** int(suffix[1:]), ""


def _unit(suffix: str) -> Fraction:
    return Fraction(_BINARY[suffix]) if suffix in _BINARY else _DECIMAL[suffix]


def format_quantity(value: Fraction, suffix: str = "") -> str:
    for candidate in (suffix, "", "m", "n"):
        scaled = value / _unit(candidate)
        if scaled.denominator == 1:
            return f"{scaled.numerator}{candidate}"
    # Below a nanounit: round up, as Kubernetes does.
    n = -((-value.numerator * 10**9) // value.denominator)
    return f"{n}n"


def sum_resources(resource_lists: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """Per-resource sums of several ResourceLists, printed as quantities (names sorted)."""
    totals: dict[str, Fraction] = {}
    suffixes: dict[str, str] = {}
    for resources in resource_lists:
        for name, raw in resources.items():
            amount, suffix = parse_quantity(raw)
            totals[name] = totals.get(name, Fraction(0)) + amount
            suffixes.setdefault(name, suffix)
    return {name: format_quantity(totals[name], suffixes[name]) for name in sorted(totals)}
