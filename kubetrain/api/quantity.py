"""Kubernetes resource quantities (`resource.Quantity`): the grammar, exact parsing and printing.

The one quantity module of kubetrain: job validation (pod templates, `minResources`), PodGroup
`minResources` sums and TrainingPolicy totals all use it. Grammar
(k8s.io/apimachinery/pkg/api/resource)::

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
from collections.abc import Iterable, Mapping
from fractions import Fraction

from kubetrain.api.errors import QUOTE

# The grammar above as a regular expression (also the JSON Schema `pattern` of a pod template's
# quantities): group 1 the number, then one of group 2 a binary suffix, group 3 a decimal
# exponent, group 4 a decimal suffix (possibly empty).
QUANTITY_PATTERN = (
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(Ki|Mi|Gi|Ti|Pi|Ei)|[eE]([+-]?[0-9]+)|([numkMGTPE]?))$"
)
QUANTITY_EXAMPLES = '"500m", "2", "1.5", "16Gi", "1e3"'

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
_QUANTITY = re.compile(QUANTITY_PATTERN)


class QuantityError(ValueError):
    """The value is not a Kubernetes quantity."""


def is_quantity_string(text: str) -> bool:
    """Whether `text`, exactly as written, follows the quantity grammar."""
    return _QUANTITY.match(text) is not None


def parse_quantity_suffix(value: object) -> tuple[Fraction, str]:
    """The exact value of a quantity given as a string (`"500m"`, `"16Gi"`) or a number, and the
    suffix it was written with ("" for a number, no suffix or a decimal exponent)."""
    if isinstance(value, bool):
        raise QuantityError(f"{QUOTE.encode(value)} is not a quantity")
    if isinstance(value, int):
        return Fraction(value), ""
    if isinstance(value, float):
        return Fraction(repr(value)), ""
    if not isinstance(value, str):
        raise QuantityError(f"{QUOTE.encode(value)} is not a quantity")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise QuantityError(
            f"{QUOTE.encode(value)} is not a quantity: must be a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3)"
        )
    number, binary, exponent, decimal = match.groups()
    amount = Fraction(number)
    if binary:
        return amount * _BINARY[binary], binary
    if exponent is not None:
        return amount * Fraction(10) ** int(exponent), ""
    return amount * _DECIMAL[decimal], decimal


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity given as a string (`"500m"`, `"16Gi"`) or a number."""
    return parse_quantity_suffix(value)[0]


def parse_resource_list(values: object) -> tuple[dict[str, Fraction], list[str]]:
    """A ResourceList (`{"cpu": "500m", "pods": "4"}`) as amounts, and the names whose value is
    not a quantity (left out); anything but a mapping is an empty list."""
    amounts: dict[str, Fraction] = {}
    invalid: list[str] = []
    for name, value in values.items() if isinstance(values, Mapping) else ():
        try:
            amounts[str(name)] = parse_quantity(value)
        except ValueError:  # QuantityError, or a float that is no number (nan, inf)
            invalid.append(str(name))
    return amounts, invalid


def is_binary(value: object) -> bool:
    """Whether the quantity is written with a binary suffix (Ki, Mi, …)."""
    return isinstance(value, str) and value.strip()[-2:] in _BINARY


def _unit(suffix: str) -> Fraction:
    return Fraction(_BINARY[suffix]) if suffix in _BINARY else _DECIMAL[suffix]


def format_quantity(value: Fraction, *, binary: bool = False, suffix: str | None = None) -> str:
    """A string for an exact value, in the style Kubernetes prints quantities.

    With `suffix` (one of the grammar's suffixes), the value is written in that suffix when that
    is exact ("8Gi", "1500m"). Otherwise the canonical form: integers take the largest suffix
    that divides them exactly (binary suffixes when `binary` is true, e.g. `80Gi`; decimal ones
    otherwise, e.g. `2k`); fractions are printed in milli/micro/nano units (`1500m`), rounded up
    to whole nano units if finer still.
    """
    if suffix is not None:
        scaled = value / _unit(suffix)
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
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
        for candidate, multiple in suffixes:
            if whole % multiple == 0:
                return f"{sign}{whole // multiple}{candidate}"
        return f"{sign}{whole}"
    for candidate in ("m", "u"):
        scaled = value / _DECIMAL[candidate]
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{candidate}"
    nanos = value / _DECIMAL["n"]
    ceil = -(-nanos.numerator // nanos.denominator)
    return f"{sign}{ceil}n"


def sum_resources(resource_lists: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """Per-resource sums of several ResourceLists, printed as quantities (names sorted).

    A sum is written with the suffix of its first term when that is exact ("4Gi" + "4Gi" = "8Gi",
    "500m" + "1" = "1500m"), else in the canonical form of that term's family (binary or decimal).
    """
    totals: dict[str, Fraction] = {}
    suffixes: dict[str, str] = {}
    for resources in resource_lists:
        for name, raw in resources.items():
            amount, suffix = parse_quantity_suffix(raw)
            totals[name] = totals.get(name, Fraction(0)) + amount
            suffixes.setdefault(name, suffix)
    return {name: format_sum(totals[name], suffixes[name]) for name in sorted(totals)}


def format_sum(value: Fraction, suffix: str) -> str:
    """A sum written with the suffix of its first term when exact, else canonically in that
    term's family (binary or decimal)."""
    return format_quantity(value, binary=suffix in _BINARY, suffix=suffix)
