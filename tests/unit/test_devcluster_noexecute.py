"""The taint-eviction controller's decisions (devcluster/controllers/noexecute.py) with cases of
upstream's pkg/controller/tainteviction taint_eviction_test.go (`TestGetMinTolerationTime`,
`TestCreatePod`, `TestUpdateNode`, `TestUpdateNodeWithMultipleTaints`) and core/v1 helper
`GetMatchingTolerations`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubetrain.devcluster.controllers import noexecute
from kubetrain.devcluster.controllers.noexecute import Plan, Work

Obj = dict[str, Any]


def taint(key: str, effect: str = "NoExecute") -> Obj:
    return {"key": key, "value": "x", "effect": effect}


def tol(key: str, seconds: int | None = None) -> Obj:
    out: Obj = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


def test_only_no_execute_taints_count() -> None:
    node = {"spec": {"taints": [taint("a", "NoSchedule"), taint("b"), taint("c", "PreferNoSchedule")]}}
    assert noexecute.no_execute_taints(node) == [taint("b")]
    assert noexecute.no_execute_taints({"spec": {}}) == []


def test_matching_tolerations_need_one_for_every_taint() -> None:
    assert noexecute.matching_tolerations([taint("a"), taint("b")], [tol("a", 5), tol("b")]) == [
        tol("a", 5),
        tol("b"),
    ]
    assert noexecute.matching_tolerations([taint("a"), taint("b")], [tol("a", 5)]) is None
    assert noexecute.matching_tolerations([taint("a")], None) is None
    # the first toleration that matches is the one used
    wildcard = {"operator": "Exists"}
    assert noexecute.matching_tolerations([taint("a")], [wildcard, tol("a", 5)]) == [wildcard]


@pytest.mark.parametrize(
    ("used", "expected"),
    [
        ([], 0),
        ([tol("a", 10)], 10),
        ([tol("a", 10), tol("b", 20)], 10),
        ([tol("a"), tol("b", 20)], 20),  # forever does not lower the minimum
        ([tol("a"), tol("b")], None),  # every one forever: never
        ([tol("a", 0), tol("b", 20)], 0),
        ([tol("a", -5), tol("b", 20)], 0),  # zero or less: at once
    ],
)
def test_min_toleration_seconds(used: list[Obj], expected: int | None) -> None:
    assert noexecute.min_toleration_seconds(used) == expected


def test_an_untolerated_taint_evicts_at_once_and_replaces_a_planned_eviction() -> None:
    assert noexecute.plan(None, [taint("a")], [], 7.0) == Plan(cancel=True, work=Work(7.0, 7.0))
    assert noexecute.plan(Work(1.0, 31.0), [taint("a")], [], 7.0) == Plan(cancel=True, work=Work(7.0, 7.0))


def test_tolerated_for_a_while_is_evicted_after_the_smallest_toleration() -> None:
    tolerations = [tol("a", 30), tol("b", 10)]
    assert noexecute.plan(None, [taint("a"), taint("b")], tolerations, 5.0) == Plan(False, Work(5.0, 15.0))


def test_tolerated_forever_or_no_taints_cancels() -> None:
    assert noexecute.plan(Work(1.0, 31.0), [taint("a")], [tol("a")], 7.0) == Plan(cancel=True, work=None)
    assert noexecute.plan(Work(1.0, 31.0), [], [tol("a", 3)], 7.0) == Plan(cancel=True, work=None)


def test_a_planned_eviction_is_kept_when_another_tolerated_taint_comes() -> None:
    both, tolerations = [taint("a"), taint("b")], [tol("a", 30), tol("b", 5)]
    # `processPodOnNode`: work created before now stands (its deadline is not moved)
    assert noexecute.plan(Work(1.0, 31.0), both, tolerations, 7.0) == Plan(cancel=False, work=None)
    # planned at this very moment: re-planned from its creation with the new minimum
    assert noexecute.plan(Work(7.0, 37.0), both, tolerations, 7.0) == Plan(cancel=True, work=Work(7.0, 12.0))


NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_the_disruption_condition_is_added_once_keeping_other_conditions() -> None:
    ready = {"type": "Ready", "status": "True"}
    conditions = noexecute.add_condition({"conditions": [ready]}, NOW)
    assert conditions == [
        ready,
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "lastProbeTime": None,
            "lastTransitionTime": "2026-01-02T03:04:05Z",
        },
    ]
    assert noexecute.add_condition({"conditions": conditions}, NOW) is None
    other = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "lastTransitionTime": "t0",
    }
    replaced = noexecute.add_condition({"conditions": [other]}, NOW)
    assert replaced is not None and replaced[0]["reason"] == "DeletionByTaintManager"
    assert replaced[0]["lastTransitionTime"] == "t0"  # the status did not change


def test_the_disruption_condition_observes_the_pods_generation() -> None:
    """taint_eviction.go sets `ObservedGeneration: CalculatePodConditionObservedGeneration(...)`,
    the pod's generation since PodObservedGenerationTracking went GA (1.35). `UpdatePodCondition`
    does not compare observedGeneration, so a condition that differs only there is not patched."""
    (condition,) = noexecute.add_condition({"conditions": []}, NOW, generation=2) or []
    assert condition["observedGeneration"] == 2
    assert noexecute.add_condition({"conditions": [condition]}, NOW, generation=2) is None
    assert noexecute.add_condition({"conditions": [condition]}, NOW, generation=3) is None
    other = {**condition, "reason": "EvictionByEvictionAPI"}
    (newer,) = noexecute.add_condition({"conditions": [other]}, NOW, generation=3) or []
    assert newer["observedGeneration"] == 3 and newer["lastTransitionTime"] == condition["lastTransitionTime"]


def test_the_events_name_the_pod_as_upstream() -> None:
    marking = noexecute.eviction_event("ns", "w-0", False, NOW)
    assert (marking["reason"], marking["type"], marking["message"]) == (
        "TaintManagerEviction",
        "Normal",
        "Marking for deletion Pod ns/w-0",
    )
    assert marking["involvedObject"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "w-0"}
    assert marking["source"] == {"component": "taint-eviction-controller"}
    cancelling = noexecute.eviction_event("ns", "w-0", True, NOW)
    assert cancelling["message"] == "Cancelling deletion of Pod ns/w-0"
