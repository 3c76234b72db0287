"""The node lifecycle controller's taints (devcluster/controllers/nodelifecycle.py), as upstream's
node_lifecycle_controller.go `doNoScheduleTaintingPass` and `processTaintBaseEviction` /
`doNoExecuteTaintingPass` keep them (cases after its `TestTaintsNodeByCondition` and
`TestApplyNoExecuteTaints`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubetrain.devcluster.controllers.nodelifecycle import reconciled_taints

Obj = dict[str, Any]
NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
STAMP = "2026-03-04T05:06:07Z"


def node(
    ready: str | None = "True", *, unschedulable: bool = False, taints: list[Obj] | None = None, **conds: str
) -> Obj:
    conditions = [{"type": "Ready", "status": ready}] if ready is not None else []
    conditions += [{"type": t, "status": s} for t, s in conds.items()]
    spec: Obj = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": "n"}, "spec": spec, "status": {"conditions": conditions}}


def added(key: str, effect: str) -> Obj:
    return {"key": key, "effect": effect, "timeAdded": STAMP}


GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def test_a_ready_schedulable_node_needs_no_taint() -> None:
    assert reconciled_taints(node(), NOW) is None
    assert reconciled_taints(node(taints=[GPU]), NOW) is None  # others' taints are left alone


def test_a_cordon_adds_the_unschedulable_taint_and_uncordon_removes_it() -> None:
    assert reconciled_taints(node(unschedulable=True, taints=[GPU]), NOW) == [
        GPU,
        added("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    cordoned = [GPU, added("node.kubernetes.io/unschedulable", "NoSchedule")]
    assert reconciled_taints(node(unschedulable=True, taints=cordoned), NOW) is None
    assert reconciled_taints(node(taints=cordoned), NOW) == [GPU]


@pytest.mark.parametrize(
    ("ready", "key"),
    [("False", "node.kubernetes.io/not-ready"), ("Unknown", "node.kubernetes.io/unreachable")],
)
def test_a_node_not_ready_gets_no_schedule_and_no_execute_taints(ready: str, key: str) -> None:
    assert reconciled_taints(node(ready), NOW) == [added(key, "NoSchedule"), added(key, "NoExecute")]


def test_unknown_after_false_swaps_the_taints_and_ready_removes_them() -> None:
    not_ready = [
        added("node.kubernetes.io/not-ready", "NoSchedule"),
        added("node.kubernetes.io/not-ready", "NoExecute"),
    ]
    assert reconciled_taints(node("Unknown", taints=not_ready), NOW) == [
        added("node.kubernetes.io/unreachable", "NoSchedule"),
        added("node.kubernetes.io/unreachable", "NoExecute"),
    ]
    assert reconciled_taints(node("True", taints=not_ready), NOW) == []


def test_pressure_conditions_taint_no_schedule_only() -> None:
    assert reconciled_taints(node(MemoryPressure="True", DiskPressure="False"), NOW) == [
        added("node.kubernetes.io/memory-pressure", "NoSchedule")
    ]


def test_a_node_without_ready_condition_keeps_its_no_execute_taints() -> None:
    unreachable = [added("node.kubernetes.io/unreachable", "NoExecute")]
    assert reconciled_taints(node(None, taints=unreachable), NOW) is None
