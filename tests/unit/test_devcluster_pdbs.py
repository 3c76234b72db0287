"""PodDisruptionBudget validation (pkg/apis/policy/validation `ValidatePodDisruptionBudgetSpec`),
selection (`LabelSelectorAsSelector`) and the disruption controller's status arithmetic
(pkg/controller/disruption `getExpectedPodCount`, `countHealthyPods`, `buildDisruptedPodMap`,
`updatePdbStatus`, `failSafe`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubetrain.devcluster.apiserver.kinds import meta
from kubetrain.devcluster.apiserver.kinds.pdbs import pdb_causes, selects
from kubetrain.devcluster.apiserver.kinds.resources import BUILTINS
from kubetrain.devcluster.apiserver.verbs.printers import columns_and_rows
from kubetrain.devcluster.controllers.disruptionstatus import (
    SyncError,
    expected_and_desired,
    new_status,
    scaled_value,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def causes(spec: dict[str, Any], status: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    obj: dict[str, Any] = {"spec": spec}
    if status is not None:
        obj["status"] = status
    return [(c.field, c.message) for c in pdb_causes(obj)]


def pod(name: str, ready: bool = True, owner: str | None = "job-uid", **md: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {"app": "a"}, **md}
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "example.com/v1", "kind": "Job", "name": "j", "uid": owner, "controller": True}
        ]
    return {
        "metadata": metadata,
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


def budget(spec: dict[str, Any], status: dict[str, Any] | None = None, generation: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": "b", "namespace": "ns", "generation": generation},
        "spec": spec,
        "status": status or {},
    }


def no_scale(ref: dict[str, Any], namespace: str) -> int | None:
    raise AssertionError("an integer minAvailable needs no controller scale")


def scale_of(replicas: dict[str, int]) -> Any:
    return lambda ref, namespace: replicas.get(ref["uid"])


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minAvailable": 0, "selector": {}}, []),
        ({"maxUnavailable": "100%"}, []),
        ({}, []),  # upstream allows neither: such a budget never allows a disruption
        (
            {"minAvailable": -2},
            [("spec.minAvailable", "Invalid value: -2: must be greater than or equal to 0")],
        ),
        (
            {"maxUnavailable": "101%"},
            [("spec.maxUnavailable", 'Invalid value: "101%": must not be greater than 100%')],
        ),
        (
            {"minAvailable": "5"},
            [
                (
                    "spec.minAvailable",
                    'Invalid value: "5": a valid percent string must be a numeric string followed by '
                    "an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )
            ],
        ),
        (
            {"unhealthyPodEvictionPolicy": "Never"},
            [
                (
                    "spec.unhealthyPodEvictionPolicy",
                    'Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"',
                )
            ],
        ),
        (
            {"selector": {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]}},
            [
                (
                    "spec.selector.matchExpressions[0].values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            ],
        ),
    ],
)
def test_spec_validation(spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert causes(spec) == expected


def test_both_bounds_refused_naming_the_spec() -> None:
    [(field, message)] = causes({"minAvailable": 1, "maxUnavailable": 1})
    assert field == "spec"
    assert (
        message == 'Invalid value: {"minAvailable":1,"maxUnavailable":1}: '
        "minAvailable and maxUnavailable cannot be both set"
    )


def test_negative_status_counts_refused() -> None:
    assert causes({}, {"disruptionsAllowed": -1, "expectedPods": 2}) == [
        ("status.disruptionsAllowed", "Invalid value: -1: must be greater than or equal to 0")
    ]


def test_selection() -> None:
    labels = {"app": "a", "tier": "x"}
    assert not selects(None, labels)  # a null selector selects nothing
    assert selects({}, labels)  # an empty one everything
    assert selects({"matchLabels": {"app": "a"}}, labels)
    assert not selects({"matchLabels": {"app": "b"}}, labels)
    assert selects({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]}, labels)
    assert not selects({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}, labels)
    assert selects({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, labels)
    assert not selects({"matchExpressions": [{"key": "tier", "operator": "Near", "values": ["x"]}]}, labels)


def test_scaled_value_rounds_up_as_upstream() -> None:
    assert scaled_value("50%", 3, True) == 2
    assert scaled_value("34%", 3, True) == 2
    assert scaled_value("0%", 7, True) == 0
    assert scaled_value(4, 10, True) == 4


def test_expected_and_desired() -> None:
    pods = [pod("a"), pod("b"), pod("c", owner="other-uid"), pod("loose", owner=None)]
    # an integer minAvailable: the pods selected, whatever controls them
    assert expected_and_desired({"minAvailable": 2}, pods, no_scale) == (4, 2)
    # a percentage or maxUnavailable: the controllers' scale, unmanaged pods left out
    scales = scale_of({"job-uid": 4, "other-uid": 2})
    assert expected_and_desired({"minAvailable": "50%"}, pods, scales) == (6, 3)
    assert expected_and_desired({"maxUnavailable": "10%"}, pods, scales) == (6, 5)
    assert expected_and_desired({"maxUnavailable": 9}, pods, scales) == (6, 0)
    assert expected_and_desired({}, pods, scales) == (0, 0)
    with pytest.raises(SyncError, match='found no controllers for pod "c"'):
        expected_and_desired({"maxUnavailable": 1}, pods, scale_of({"job-uid": 4}))


def test_status_counts_ready_pods_not_being_deleted_or_evicted() -> None:
    recent = meta.timestamp(NOW - timedelta(seconds=30))
    stale = meta.timestamp(NOW - timedelta(minutes=3))
    pods = [
        pod("ready"),
        pod("unready", ready=False),
        pod("deleting", deletionTimestamp=meta.timestamp(NOW)),
        pod("evicted"),
        pod("not-deleted"),
    ]
    old = {"disruptedPods": {"evicted": recent, "not-deleted": stale, "deleting": recent, "gone": recent}}
    status, recheck = new_status(budget({"minAvailable": 1}, old), pods, no_scale, NOW)
    # "evicted" is in flight (< 2 min); "not-deleted" was expected gone by now and counts again
    assert status["disruptedPods"] == {"evicted": recent}
    assert recheck == NOW + timedelta(seconds=90)
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"]) == (2, 1, 5)
    assert status["disruptionsAllowed"] == 1 and status["observedGeneration"] == 1
    [cond] = status["conditions"]
    assert cond == {
        "type": "DisruptionAllowed",
        "status": "True",
        "observedGeneration": 1,
        "reason": "SufficientPods",
        "message": "",
        "lastTransitionTime": meta.timestamp(NOW),
    }

    # Later, one healthy pod fewer: the condition flips, with a new transition time.
    later = NOW + timedelta(minutes=5)
    status2, _ = new_status(budget({"minAvailable": 2}, status, generation=2), pods[:2], no_scale, later)
    assert status2["disruptionsAllowed"] == 0 and "disruptedPods" not in status2
    assert status2["conditions"][0]["reason"] == "InsufficientPods"
    assert status2["conditions"][0]["lastTransitionTime"] == meta.timestamp(later)
    assert status2["observedGeneration"] == 2


def test_no_expected_pods_allows_no_disruption() -> None:
    status, _ = new_status(budget({"minAvailable": 0}), [], no_scale, NOW)
    assert (status["expectedPods"], status["disruptionsAllowed"]) == (0, 0)


def test_a_failed_sync_allows_no_disruption() -> None:
    def broken(ref: dict[str, Any], namespace: str) -> int | None:
        raise SyncError("jobs.example.com does not implement the scale subresource")

    old = {"disruptionsAllowed": 3, "observedGeneration": 1, "currentHealthy": 4}
    status, _ = new_status(budget({"maxUnavailable": 1}, old), [pod("a")], broken, NOW)
    assert status["disruptionsAllowed"] == 0 and status["currentHealthy"] == 4
    [cond] = status["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "SyncFailed",
        "jobs.example.com does not implement the scale subresource",
    )


def test_kubectl_get_columns() -> None:
    """`printPodDisruptionBudget`: NAME, MIN AVAILABLE, MAX UNAVAILABLE, ALLOWED DISRUPTIONS, AGE."""
    rt = next(r for r in BUILTINS if r.resource == "poddisruptionbudgets")
    created = meta.timestamp(NOW - timedelta(minutes=5))
    budgets = [
        {
            "metadata": {"name": "a", "creationTimestamp": created},
            "spec": {"minAvailable": 2},
            "status": {"disruptionsAllowed": 1},
        },
        {"metadata": {"name": "b", "creationTimestamp": created}, "spec": {"maxUnavailable": "25%"}},
    ]
    cols, rows = columns_and_rows(rt, budgets, NOW)
    assert [c["name"] for c in cols] == [
        "Name",
        "Min Available",
        "Max Unavailable",
        "Allowed Disruptions",
        "Age",
    ]
    assert rows == [["a", "2", "N/A", 1, "5m"], ["b", "N/A", "25%", 0, "5m"]]
