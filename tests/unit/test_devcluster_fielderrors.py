"""Bad values in field errors print as apimachinery 0.34+ (Kubernetes 1.34 and later) prints them
(`field.Error.ErrorBody`): int64, float64 and bool with %v, strings with %q, everything else as
Go's `json.Marshal` writes it — what a client reading a 422 from a 1.36 kube-apiserver sees."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.kinds.fielderrors import duplicate, invalid, not_supported


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("x", '"x"'),
        (3, "3"),
        (2.0, "2"),
        (1.5, "1.5"),
        (True, "true"),
        (None, "null"),  # a nil pointer: json's null (it was "null", %q of the word, before 1.34)
        (["v1", "v2"], '["v1","v2"]'),  # was []string{"v1", "v2"}
        ({"name": "x", "a": 1.0}, '{"a":1,"name":"x"}'),  # keys sorted, no spaces
        ([{"k": None}, 42], '[{"k":null},42]'),
        ({"cmd": "a<b && c>d"}, '{"cmd":"a\\u003cb \\u0026\\u0026 c\\u003ed"}'),  # HTML-escaped
    ],
)
def test_values_print_as_json_unless_simple(value: Any, shown: str) -> None:
    assert invalid("spec.x", value, "why").message == f"Invalid value: {shown}: why"
    assert duplicate("spec.x", value).message == f"Duplicate value: {shown}"


def test_supported_values_stay_quoted_strings() -> None:
    cause = not_supported("spec.policy", ["a"], ["All", "None"])
    assert cause.message == 'Unsupported value: ["a"]: supported values: "All", "None"'
