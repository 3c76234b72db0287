"""devcluster's server-side table printing evaluates CRD printer-column JSONPaths like kube-apiserver."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.verbs.tables import _path

JOB: dict[str, Any] = {
    "metadata": {"name": "j"},
    "status": {
        "conditions": [
            {"type": "Created", "status": "True"},
            {"type": "Running", "status": "False"},
            {"type": "Succeeded", "status": "True"},
        ],
        "active": 0,
        "ready": True,
    },
}
RESUMED: dict[str, Any] = {"status": {"conditions": [{"type": "Suspended", "status": "False"}]}}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".status.conditions[-1:].type", "Succeeded"),  # the State column of every job kind
        (".status.conditions[0].type", "Created"),
        # several matches: kube-apiserver's table convertor shows the first (results[0][0])
        (".status.conditions[*].type", "Created"),
        (".status.conditions[1:3].type", "Running"),
        ('.status.conditions[?(@.status=="True")].type', "Created"),
        (".status.conditions[?(@.type=='Running')].status", "False"),
        ('.status.conditions[?(@.status!="True")].type', "Running"),
        ('.status.conditions[?(@.type=="Missing")].type', None),
        ('.status.conditions[?(@.reason=="X")].type', None),  # no such field: no match
        (".status.active", 0),  # a zero is a value, not a missing field
        (".status.missing", None),
        (".status.conditions[7].type", None),
    ],
)
def test_printer_column_jsonpath(path: str, expected: Any) -> None:
    assert _path(JOB, path) == expected


def test_the_trainjob_state_column_is_empty_while_a_resumed_trainjob_runs() -> None:
    """Trainer's `.status.conditions[-1:].type` showed `Suspended` for a resumed TrainJob (its
    `Suspended` condition stays, False); kubetrain's State column shows the True condition."""
    from kubetrain.jobs.trainercrds import trainer_crds

    [trainjob] = [c for c in trainer_crds() if c["spec"]["names"]["kind"] == "TrainJob"]
    columns = trainjob["spec"]["versions"][0]["additionalPrinterColumns"]
    state = next(c["jsonPath"] for c in columns if c["name"] == "State")
    assert _path(RESUMED, state) is None
    suspended = {"status": {"conditions": [{"type": "Suspended", "status": "True"}]}}
    assert _path(suspended, state) == "Suspended"
    done = {
        "status": {
            "conditions": [{"type": "Suspended", "status": "False"}, {"type": "Complete", "status": "True"}]
        }
    }
    assert _path(done, state) == "Complete"
