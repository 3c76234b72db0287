"""devcluster's server-side table printing evaluates CRD printer-column JSONPaths like kube-apiserver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubetrain.devcluster.apiserver.verbs.printers.custom import path as _path
from kubetrain.devcluster.apiserver.verbs.printers.events import COLUMNS as _EVENT_COLUMNS
from kubetrain.devcluster.apiserver.verbs.printers.events import row as _event_row

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


NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


def _ago(seconds: int, micro: bool = False) -> str:
    when = NOW - timedelta(seconds=seconds)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("event", "cells"),
    [
        (  # a recorder's Event: its own count and timestamps, `component, host` as the source
            {
                "firstTimestamp": _ago(300),
                "lastTimestamp": _ago(30),
                "count": 4,
                "type": "Warning",
                "reason": "JobRestarting",
                "involvedObject": {"kind": "PyTorchJob", "name": "mnist", "fieldPath": "spec"},
                "source": {"component": "kubetrain-operator", "host": "node-1"},
                "message": " restarting  \n",
            },
            [
                "30s",
                "Warning",
                "JobRestarting",
                "pytorchjob/mnist",
                "spec",
                "kubetrain-operator, node-1",
                "restarting",
                "5m",
                4,
                "ev",
            ],
        ),
        (  # the new API's singleton: eventTime, count 0 → 1, reporting controller (core/v1's
            # reportingComponent) as the source
            {
                "eventTime": _ago(90, micro=True),
                "type": "Normal",
                "reason": "Scheduled",
                "involvedObject": {"kind": "Pod"},
                "reportingComponent": "scheduler",
                "reportingInstance": "scheduler-0",
                "message": "bound",
            },
            ["90s", "Normal", "Scheduled", "pod", "", "scheduler, scheduler-0", "bound", "90s", 1, "ev"],
        ),
        (  # a series: its last observed time and count win
            {
                "eventTime": _ago(600, micro=True),
                "series": {"count": 7, "lastObservedTime": _ago(10, micro=True)},
                "involvedObject": {"kind": "Pod", "name": "p"},
            },
            ["10s", "", "", "pod/p", "", "", "", "10m", 7, "ev"],
        ),
        ({}, ["<unknown>", "", "", "", "", "", "", "<unknown>", 1, "ev"]),  # no time at all
    ],
)
def test_kubectl_get_events_gets_kube_apiservers_event_columns(
    event: dict[str, Any], cells: list[Any]
) -> None:
    assert [c["name"] for c in _EVENT_COLUMNS if c["priority"] == 0] == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Message",
    ]
    assert _event_row({"metadata": {"name": "ev"}, **event}, NOW) == cells
