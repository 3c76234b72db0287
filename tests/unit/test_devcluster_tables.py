"""devcluster's server-side table printing evaluates CRD printer-column JSONPaths like kube-apiserver."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.tables import _path

JOB: dict[str, Any] = {
    "metadata": {"name": "j"},
    "status": {"conditions": [{"type": "Created"}, {"type": "Running"}, {"type": "Succeeded"}], "active": 0},
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".status.conditions[-1:].type", "Succeeded"),  # the State column of every job kind
        (".status.conditions[0].type", "Created"),
        (".status.conditions[*].type", "Created,Running,Succeeded"),
        (".status.conditions[0:2].type", "Created,Running"),
        (".status.active", 0),  # a zero is a value, not a missing field
        (".status.missing", None),
        (".status.conditions[7].type", None),
    ],
)
def test_printer_column_jsonpath(path: str, expected: Any) -> None:
    assert _path(JOB, path) == expected
