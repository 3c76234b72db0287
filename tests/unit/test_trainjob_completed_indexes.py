"""A TrainJob's succeeded indexes, as the Job controller keeps them (docs/behaviour.md §11,
"Running, finishing, restarting"): a Succeeded pod deleted afterwards (pod garbage collection of
a removed node, `kubectl delete`) is not made again and still counts as succeeded."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

from trainjobs import RUNTIME, planned_trainjob, stored_snapshot, trainjob_pod, warmup_first_runtime

from kubetrain.jobs.trainjob import children as ch
from kubetrain.operator.completedindexes import COMPLETED_INDEXES
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

Obj = dict[str, Any]
NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
pod = trainjob_pod
trainjob = planned_trainjob
warmup_runtime = warmup_first_runtime


snapshot = stored_snapshot


def plan(job: Obj, pods: list[Obj], snap: Obj) -> Any:
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=[snap])
    return plan_trainjob(job, observed, RUNTIME, NOW, PlannerConfig())


def state_of(p: Any) -> Obj:
    [snap] = [c for c in p.update_children if c["metadata"]["name"] == "tj-runtime-snapshot"]
    return dict(json.loads(snap["data"][ch.STATE_KEY]))


def created(p: Any) -> list[str]:
    return [x["metadata"]["name"] for x in p.create_pods]


def test_a_deleted_succeeded_node_is_not_made_again_and_counts_for_completion() -> None:
    job = trainjob(2)
    p = plan(job, [pod("tj-node-0-0"), pod("tj-node-0-1", phase="Succeeded", ready=False)], snapshot(job))
    state = state_of(p)
    assert state[COMPLETED_INDEXES] == {"node": [1]}
    snap = snapshot(job, state=state)

    p = plan(job, [pod("tj-node-0-0")], snap)  # tj-node-0-1 garbage-collected with its node
    assert created(p) == [] and p.delete_pods == []
    [node] = p.status["jobsStatus"]
    assert (node["active"], node["ready"], node["succeeded"]) == (1, 1, 0)  # Kueue's PodsReady holds

    p = plan(job, [pod("tj-node-0-0", phase="Succeeded", ready=False)], snap)
    assert [(c["type"], c["status"]) for c in p.status["conditions"]] == [("Complete", "True")]
    assert p.status["jobsStatus"][0]["succeeded"] == 1


def test_a_completed_initializer_is_not_run_again_when_its_pod_is_gone() -> None:
    job = trainjob(2)
    runtime = warmup_runtime()
    pods = [pod("tj-warmup-0-0", phase="Succeeded", ready=False), pod("tj-node-0-0"), pod("tj-node-0-1")]
    state = state_of(plan(job, pods, snapshot(job, runtime)))
    assert state[COMPLETED_INDEXES] == {"warmup": [0]}
    # the warmup pod is gone and a node pod was deleted: the node is made again, the warmup not
    p = plan(job, [pod("tj-node-0-0")], snapshot(job, runtime, state))
    assert created(p) == ["tj-node-0-1"]
    assert {s["name"]: s["succeeded"] for s in p.status["jobsStatus"]} == {"warmup": 1, "node": 0}


def test_the_record_keeps_only_indexes_the_job_has() -> None:
    job = trainjob(2)
    state = {COMPLETED_INDEXES: {"node": [1, 5, "x"], "gone": [0]}, "restarts": 0}
    p = plan(job, [pod("tj-node-0-0")], snapshot(job, state=state))
    assert created(p) == []  # index 1 completed: not made again
    assert state_of(p)[COMPLETED_INDEXES] == {"node": [1]}


def test_a_whole_gang_restart_starts_the_record_over() -> None:
    job = trainjob(2)
    runtime = copy.deepcopy(RUNTIME)
    spec = runtime["spec"]["template"]["spec"]
    spec["failurePolicy"] = {"maxRestarts": 2}
    node = spec["replicatedJobs"][0]["template"]["spec"]
    node["backoffLimit"] = 0
    node["template"]["spec"]["restartPolicy"] = "Never"
    failed = pod("tj-node-0-0", phase="Failed", ready=False)
    failed["status"]["containerStatuses"] = [{"name": "node", "state": {"terminated": {"exitCode": 1}}}]
    state = {COMPLETED_INDEXES: {"node": [1]}, "restarts": 0}
    p = plan(job, [failed, pod("tj-node-0-1", phase="Succeeded", ready=False)], snapshot(job, runtime, state))
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]  # RestartJobSet
    after = state_of(p)
    assert after["restarts"] == 1 and COMPLETED_INDEXES not in after
    assert created(plan(job, [], snapshot(job, runtime, after))) == ["tj-node-0-0", "tj-node-0-1"]
