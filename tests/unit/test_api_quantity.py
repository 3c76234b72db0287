"""Kubernetes quantities are parsed exactly (no float rounding can let a job past a limit)."""

from fractions import Fraction

import pytest

from kubetrain.policy.quantity import QuantityError, format_quantity, is_binary, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Fraction(1)),
        (4, Fraction(4)),
        (0.5, Fraction(1, 2)),
        ("500m", Fraction(1, 2)),
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("1.", Fraction(1)),
        ("+2", Fraction(2)),
        ("-1", Fraction(-1)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("2G", Fraction(2 * 10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("1Mi", Fraction(2**20)),
        ("16Gi", Fraction(16 * 2**30)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("1Ti", Fraction(2**40)),
        ("1Pi", Fraction(2**50)),
        ("1Ei", Fraction(2**60)),
        ("10u", Fraction(1, 10**5)),
        ("3n", Fraction(3, 10**9)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("5e-1", Fraction(1, 2)),
        ("12E+2", Fraction(1200)),
    ],
)
def test_parse_quantity_is_exact(text: object, value: Fraction) -> None:
    assert parse_quantity(text) == value


def test_milli_cpus_add_up_exactly() -> None:
    assert parse_quantity("100m") * 3 + parse_quantity("700m") == 1


@pytest.mark.parametrize(
    "text", ["", "abc", "1KB", "1kb", "1K", "Gi", "1 Gi", "1Gi2", "--1", "1e", "1.2.3", True, None]
)
def test_invalid_quantities_are_rejected(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("value", "binary", "text"),
    [
        (Fraction(48), False, "48"),
        (Fraction(2000), False, "2k"),
        (Fraction(0), False, "0"),
        (Fraction(3, 2), False, "1500m"),
        (Fraction(80 * 2**30), True, "80Gi"),
        (Fraction(1536 * 2**20), True, "1536Mi"),
        (Fraction(1000), True, "1000"),
        (Fraction(1, 10**5), False, "10u"),
        (Fraction(1, 3), False, "333333334n"),
    ],
)
def test_format_quantity(value: Fraction, binary: bool, text: str) -> None:
    assert format_quantity(value, binary=binary) == text
    if not text.endswith("n"):
        assert parse_quantity(text) == value


def test_is_binary() -> None:
    assert is_binary("64Gi")
    assert not is_binary("64G")
    assert not is_binary(32)
