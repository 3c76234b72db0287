"""Kubernetes quantities are parsed exactly (no float rounding can let a job past a limit).

One module serves job validation, PodGroup minResources sums and TrainingPolicy totals."""

from fractions import Fraction

import pytest

from kubetrain.api.quantity import (
    QuantityError,
    format_quantity,
    is_binary,
    is_quantity_string,
    parse_quantity,
    sum_resources,
)


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


@pytest.mark.parametrize(
    ("lists", "sums"),
    [
        ([{"memory": "4Gi"}, {"memory": "4Gi"}], {"memory": "8Gi"}),
        ([{"cpu": "500m"}, {"cpu": "1"}], {"cpu": "1500m"}),
        ([{"cpu": "1000"}, {"cpu": 1000}], {"cpu": "2000"}),
        ([{"memory": "1Gi"}, {"memory": "512Mi"}], {"memory": "1536Mi"}),
        ([{"gpu": "1", "cpu": "2"}, {"gpu": 1}], {"cpu": "2", "gpu": "2"}),
    ],
)
def test_sums_keep_the_first_terms_suffix(lists: list[dict[str, object]], sums: dict[str, str]) -> None:
    assert sum_resources(lists) == sums


def test_the_grammar_is_checked_as_written() -> None:
    assert is_quantity_string("16Gi") and is_quantity_string("1E") and is_quantity_string("-1.5e-3")
    assert not is_quantity_string("4 cores") and not is_quantity_string(" 1") and not is_quantity_string("1e")
