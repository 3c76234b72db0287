"""After a restart (of every pod, or of one Job alone), the earlier attempt's pods still
terminating count for nothing in `jobsStatus` (docs/behaviour.md §11, the TrainJob's status), as
JobSet leaves an earlier attempt's Jobs out of `replicatedJobsStatus` (`getChildJobs`:
`previous`). Kueue derives a TrainJob's reclaimable pods from `jobsStatus[].succeeded` (Kueue
issue 14609): a Succeeded initializer pod of the attempt that failed, counted while it
terminates, would tell Kueue the re-run initializer's quota is free."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

from trainjobs import planned_trainjob, stored_snapshot, trainjob_pod, warmup_first_runtime

from kubetrain.jobs.trainjob import children as ch
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

from .test_trainjob_restartjob import JOB_ATTEMPT, record_of, rule
from .test_trainjob_restartjob import pods as running_pods
from .test_trainjob_restartjob import runtime as restartjob_runtime
from .test_trainplan import trainjob
from .test_trainplan_jobset_policies import plan as plan_policy

Obj = dict[str, Any]
NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


def runtime_restarting() -> Obj:
    """A warmup step the nodes wait for, then the nodes; a failed Job restarts the gang."""
    runtime = warmup_first_runtime()
    spec = runtime["spec"]["template"]["spec"]
    spec["failurePolicy"] = {"maxRestarts": 2}
    for rjob in spec["replicatedJobs"]:
        rjob["template"]["spec"]["backoffLimit"] = 0
        rjob["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    return runtime


def plan(pods: list[Obj], runtime: Obj, state: Obj | None = None) -> Any:
    job = planned_trainjob(2)
    snap = stored_snapshot(job, runtime, state)
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=[snap])
    return plan_trainjob(job, observed, runtime, NOW, PlannerConfig())


def state_of(p: Any) -> Obj:
    [snap] = [c for c in p.update_children if c["metadata"]["name"] == "tj-runtime-snapshot"]
    return dict(json.loads(snap["data"][ch.STATE_KEY]))


def counts(p: Any) -> dict[str, tuple[int, int, int]]:
    """Per step: (active, succeeded, ready) Jobs."""
    return {s["name"]: (s["active"], s["succeeded"], s["ready"]) for s in p.status["jobsStatus"]}


def terminating(pod: Obj) -> Obj:
    pod = copy.deepcopy(pod)
    pod["metadata"]["deletionTimestamp"] = "2026-11-25T12:00:00Z"
    return pod


def test_an_earlier_attempts_terminating_pods_count_for_nothing() -> None:
    runtime = runtime_restarting()
    warmup = trainjob_pod("tj-warmup-0-0", phase="Succeeded", ready=False)
    failed = trainjob_pod("tj-node-0-0", phase="Failed", ready=False)
    failed["status"]["containerStatuses"] = [{"name": "node", "state": {"terminated": {"exitCode": 1}}}]
    running = trainjob_pod("tj-node-0-1")
    before = plan([warmup, trainjob_pod("tj-node-0-0"), running], runtime)
    assert counts(before) == {"warmup": (0, 1, 0), "node": (1, 0, 1)}

    restart = plan([warmup, failed, running], runtime, state_of(before))
    assert sorted(restart.delete_pods) == ["tj-node-0-0", "tj-node-0-1", "tj-warmup-0-0"]
    after = state_of(restart)
    assert after["restarts"] == 1

    # attempt 0's pods are still terminating: no Job of attempt 1 has run yet
    old = [terminating(p) for p in (warmup, failed, running)]
    waiting = plan(old, runtime, after)
    assert counts(waiting) == {"warmup": (0, 0, 0), "node": (0, 0, 0)}
    assert waiting.create_pods == []  # the slots are held until the old pods are gone

    gone = plan([], runtime, after)
    assert [p["metadata"]["name"] for p in gone.create_pods] == ["tj-warmup-0-0"]
    assert counts(gone) == {"warmup": (0, 0, 0), "node": (0, 0, 0)}


def test_a_jobs_earlier_attempt_counts_for_nothing_after_it_restarts_alone() -> None:
    """RestartJob: warmup Job 1 failed and restarts alone; until its old pod is gone it is
    neither active nor succeeded, while the other warmup Jobs still count."""
    job, rt = trainjob(nodes=2), restartjob_runtime(rule("RestartJob"))
    observed = running_pods({"tj-warmup-1-0"})
    observed[0]["status"]["phase"] = "Succeeded"  # warmup Job 0 done
    restart = plan_policy(job, rt, observed)
    state = record_of(restart)
    assert state["jobRestarts"] == {"warmup": [0, 1, 0]}

    old = copy.deepcopy(observed)
    old[1]["metadata"]["deletionTimestamp"] = "2026-11-25T12:00:00Z"  # tj-warmup-1-0, attempt 0
    assert old[1]["metadata"]["labels"][JOB_ATTEMPT] == "0"
    old[1]["status"]["phase"] = "Running"
    p = plan_policy(job, rt, old, state)
    [warmup] = [s for s in p.status["jobsStatus"] if s["name"] == "warmup"]
    assert (warmup["succeeded"], warmup["active"], warmup["failed"]) == (1, 1, 0)
