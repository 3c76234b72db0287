"""A field error quotes the value it refuses the way it quotes the valid ones (Kubernetes'
field errors print values as JSON), whatever the value's JSON type."""

from __future__ import annotations

import pytest

from kubetrain.api.errors import not_supported, shown


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        ("Some", '"Some"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("Größe", '"Größe"'),
        (3, "3"),
        (0.5, "0.5"),
        (True, "true"),
        (None, "null"),
        (["All"], '["All"]'),
        ({"b": 1, "a": "x"}, '{"a":"x","b":1}'),
    ],
)
def test_a_value_is_printed_as_json(value: object, printed: str) -> None:
    assert shown(value) == printed


def test_not_supported_quotes_the_value_and_the_choices_alike() -> None:
    error = not_supported("spec.runPolicy.cleanPodPolicy", "Some", ["All", "Running", "None"])
    assert str(error) == (
        'spec.runPolicy.cleanPodPolicy: NotSupported: "Some" is not supported: '
        'must be one of "All", "Running", "None"'
    )
    assert (
        str(not_supported("spec.x", None, ["A"]))
        == 'spec.x: NotSupported: null is not supported: must be one of "A"'
    )


def test_a_value_json_cannot_write_is_printed_as_its_text() -> None:
    assert shown({1, 2}) in ('"{1, 2}"', '"{2, 1}"')
