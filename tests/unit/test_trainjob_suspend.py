"""Suspending a TrainJob as JobSet suspends its Jobs (docs/behaviour.md §11, "Running,
finishing, restarting"): only the active pods go, a Succeeded pod stays and is not made again on
resume, and `jobsStatus` counts the finished Jobs as succeeded and the others as suspended."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from trainjobs import RUNTIME, planned_trainjob, stored_snapshot, trainjob_pod, warmup_first_runtime

from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

Obj = dict[str, Any]
NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
pod = trainjob_pod
trainjob = planned_trainjob
warmup_runtime = warmup_first_runtime


snapshot = stored_snapshot


def plan(job: Obj, pods: list[Obj], extra: list[Obj]) -> Any:
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=extra)
    return plan_trainjob(job, observed, RUNTIME, NOW, PlannerConfig())


def suspended(job: Obj, flag: bool) -> Obj:
    out = copy.deepcopy(job)
    out["spec"]["suspend"] = flag
    return out


def test_suspending_keeps_the_succeeded_step_and_resuming_does_not_run_it_again() -> None:
    job = trainjob(nodes=2)
    snap = snapshot(job, warmup_runtime())
    done = pod("tj-warmup-0-0", phase="Succeeded", ready=False)
    running = [done, pod("tj-node-0-0"), pod("tj-node-0-1", phase="Pending", ready=False)]

    p = plan(suspended(job, True), running, [snap])
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]
    assert {s["name"]: (s["succeeded"], s["suspended"], s["active"]) for s in p.status["jobsStatus"]} == {
        "warmup": (1, 0, 0),
        "node": (0, 1, 0),
    }

    resumed = suspended(job, False)
    resumed["status"] = p.status
    p = plan(resumed, [done], [snap])
    assert p.delete_pods == []
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-0", "tj-node-0-1"]


def test_a_succeeded_pod_of_an_unfinished_job_is_kept_and_its_job_counted_suspended() -> None:
    job = trainjob(nodes=2)
    snap = snapshot(job)
    pods = [pod("tj-node-0-0", phase="Succeeded", ready=False), pod("tj-node-0-1")]
    p = plan(suspended(job, True), pods, [snap])
    assert p.delete_pods == ["tj-node-0-1"]
    [node] = p.status["jobsStatus"]
    assert (node["succeeded"], node["suspended"], node["active"], node["ready"]) == (0, 1, 0, 0)
    resumed = suspended(job, False)
    resumed["status"] = p.status
    assert [x["metadata"]["name"] for x in plan(resumed, pods[:1], [snap]).create_pods] == ["tj-node-0-1"]


def test_a_succeeded_pod_of_an_earlier_attempt_is_not_kept() -> None:
    job = trainjob(nodes=1)
    snap = snapshot(job, state={"restarts": 1})
    p = plan(suspended(job, True), [pod("tj-node-0-0", phase="Succeeded", ready=False)], [snap])
    assert p.delete_pods == ["tj-node-0-0"]
    [node] = p.status["jobsStatus"]
    assert (node["succeeded"], node["suspended"]) == (0, 1)
