"""The value of a strategic merge patch's strict error (devcluster/apiserver/decoding.py): the
patch as Go's `fmt.Sprintf("%+v", patchMap)` prints it (patch.go `applyPatchToObject`)."""

from __future__ import annotations

import pytest

from kubetrain.devcluster.apiserver.decoding import go_format


def test_maps_print_with_sorted_keys_and_lists_with_spaces() -> None:
    patch = {"spec": {"z": None, "a": [1, "x", True]}, "data": {"k": "v w"}, "metadata": {}}
    assert go_format(patch) == "map[data:map[k:v w] metadata:map[] spec:map[a:[1 x true] z:<nil>]]"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5, "1.5"),
        (2.0, "2"),
        (100000.0, "100000"),
        (1234567.0, "1.234567e+06"),
        (1e21, "1e+21"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3.25e-7, "-3.25e-07"),
        (0.0, "0"),
    ],
)
def test_floats_print_as_strconv_format_float_g(value: float, text: str) -> None:
    """strconv.FormatFloat(f, 'g', -1, 64): shortest digits, exponent form below 1e-4 or from 1e6."""
    assert go_format(value) == text
