"""A TrainJob's failures are judged per batch Job, as JobSet's Jobs judge them
(operator/groupfailure.py): a replicated job of `replicas` Jobs gives each Job the backoff limit
to itself, a Job fails on its own failures (or, OnFailure, its own pods' restarts), the
replicated job fails when one of its Jobs does, and `jobsStatus[].failed` counts failed Jobs.
The run's record keeps a one-Job group under its name and a Job of a several-Job group under
`<group>/<job index>`; a plain key from before counts against Job 0."""

from __future__ import annotations

from typing import Any

from trainjobs import record_of

from kubetrain.operator.groupfailure import judge
from kubetrain.operator.slots import slot_pods

from .test_trainjob_shape import shape_of, warmup_runtime, with_restarts
from .test_trainplan import pod, trainjob
from .test_trainplan_jobset_policies import plan

Obj = dict[str, Any]
# 4 warmup Jobs of 2 pods (tj-warmup-<job>-<index>), then 1 node Job of 2 pods
WARMUP = [f"tj-warmup-{j}-{i}" for j in range(4) for i in range(2)]


def runtime(restart_policy: str = "Never", backoff_limit: int = 3, **template_spec: Any) -> Obj:
    rt = warmup_runtime(replicas=4, **template_spec)
    warmup = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    warmup["backoffLimit"] = backoff_limit
    warmup["template"]["spec"]["restartPolicy"] = restart_policy
    return rt


def pods(failed: set[str] | frozenset[str] = frozenset(), **restarts: int) -> list[Obj]:
    """Every pod Running but those `failed`; `restarts` by pod name with `_` for `-`."""
    out = [
        pod(n, phase="Failed" if n in failed else "Running") for n in [*WARMUP, "tj-node-0-0", "tj-node-0-1"]
    ]
    for p in out:
        n = restarts.get(p["metadata"]["name"].replace("-", "_"))
        if n is not None:
            with_restarts(p, n)
    return out


def judged(rt: Obj, observed: list[Obj], recorded: object) -> Any:
    shape = shape_of(trainjob(nodes=2), rt)
    return judge(shape, slot_pods(shape, observed)[0], set(), recorded)


def jobs_status(p: Any, group: str) -> Obj:
    return next(s for s in p.status["jobsStatus"] if s["name"] == group)


def test_one_failure_in_each_of_four_jobs_fails_none_of_them() -> None:
    failed = {"tj-warmup-0-0", "tj-warmup-1-1", "tj-warmup-2-0", "tj-warmup-3-1"}
    first = judged(runtime(), pods(failed), {})
    assert sorted(first.delete) == sorted(failed)
    assert first.failures == {"warmup/0": 1, "warmup/1": 1, "warmup/2": 1, "warmup/3": 1}
    assert first.failed == [] and first.failed_jobs == {}
    # again and again: 3 failures per Job is the backoff limit, not past it
    again = judged(runtime(), pods(failed), {f"warmup/{j}": 2 for j in range(4)})
    assert again.failed == []
    assert again.failures == {f"warmup/{j}": 3 for j in range(4)}
    # through the planner: no Failed condition, no failed job, the record kept per Job
    p = plan(trainjob(nodes=2), runtime(), pods(failed), {"restarts": 0, "failures": {}})
    assert not any(c["type"] == "Failed" for c in p.status.get("conditions") or [])
    assert jobs_status(p, "warmup")["failed"] == 0
    assert record_of(p)["failures"] == {"warmup/0": 1, "warmup/1": 1, "warmup/2": 1, "warmup/3": 1}


def test_one_job_past_its_limit_fails_the_group_and_counts_one_failed_job() -> None:
    recorded = {"warmup/2": 3, "warmup/0": 1}
    failing = judged(runtime(), pods({"tj-warmup-2-1"}), recorded)
    assert failing.failures == {"warmup/0": 1, "warmup/2": 4}
    assert failing.failed == ["warmup"] and failing.failed_jobs == {"warmup": [2]}
    p = plan(trainjob(nodes=2), runtime(), pods({"tj-warmup-2-1"}), {"restarts": 0, "failures": recorded})
    failed = next(c for c in p.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "FailedJobs"
    assert failed["message"].endswith("(first failed job: tj-warmup-2)")  # the Job that failed
    assert jobs_status(p, "warmup")["failed"] == 1  # one failed Job of four, as JobSet counts
    assert jobs_status(p, "node")["failed"] == 0


def test_a_restart_policy_names_the_first_failed_job() -> None:
    rt = runtime(failurePolicy={"maxRestarts": 1})
    state = {"restarts": 0, "failures": {"warmup/3": 3, "warmup/1": 3}}
    p = plan(trainjob(nodes=2), rt, pods({"tj-warmup-3-0", "tj-warmup-1-0"}), state)
    [event] = [e for e in p.events if e.reason == "RestartJobSetFailurePolicyAction"]
    assert event.message.endswith("(first failed job: tj-warmup-1)")
    assert record_of(p)["failures"] == {}  # a whole-gang restart starts every Job's count again


def test_onfailure_restarts_count_per_job() -> None:
    rt = runtime("OnFailure", backoff_limit=2)
    # one restart in Job 0 and one in Job 1: 2 restarts, but neither Job reaches its limit of 2
    spread = judged(rt, pods(tj_warmup_0_0=1, tj_warmup_1_1=1), {})
    assert spread.failed == [] and spread.failures == {}
    # both restarts in Job 1: it fails, Job 0 does not
    together = judged(rt, pods(tj_warmup_1_0=1, tj_warmup_1_1=1), {})
    assert together.failed_jobs == {"warmup": [1]}
    # restarts and recorded failures are judged separately, each against the limit
    mixed = judged(rt, pods(tj_warmup_0_0=1), {"warmup/0": 2})
    assert mixed.failed == []
    # a backoffLimit of 0: any restart of a Job's pods fails that Job
    zero = judged(runtime("OnFailure", backoff_limit=0), pods(tj_warmup_3_1=1), {})
    assert zero.failed_jobs == {"warmup": [3]}


def test_a_group_of_one_job_keeps_its_name_as_the_key() -> None:
    shape_runtime = runtime()
    # the node group is one Job of two pods: its failures are counted together under "node"
    both = judged(shape_runtime, pods({"tj-node-0-0", "tj-node-0-1"}), {"node": 1})
    assert both.failures == {"node": 3} and both.failed == []
    past = judged(shape_runtime, pods({"tj-node-0-0"}), {"node": 6})  # node: batch/v1's default 6
    assert past.failed_jobs == {"node": [0]}
    # a record of the current form is read back as it is: nothing to write
    same = {"restarts": 0, "failures": {"node": 2, "warmup/1": 1}}
    p = plan(trainjob(nodes=2), shape_runtime, pods(), same)
    assert p.update_children == []


def test_a_record_from_before_per_job_counts_counts_against_job_zero() -> None:
    # written for the 4-Job warmup group as one count: Job 0's now, never lost
    old = {"warmup": 3}
    elsewhere = judged(runtime(), pods({"tj-warmup-1-0"}), old)
    assert elsewhere.failed == []
    assert elsewhere.failures == {"warmup/0": 3, "warmup/1": 1}
    in_job_zero = judged(runtime(), pods({"tj-warmup-0-1"}), old)
    assert in_job_zero.failed_jobs == {"warmup": [0]}  # 4 > 3, as the group failed before
    # the planner rewrites the record in the per-Job form, with nothing new to count too
    p = plan(trainjob(nodes=2), runtime(), pods(), {"restarts": 0, "failures": old})
    assert record_of(p)["failures"] == {"warmup/0": 3}
    # both forms for Job 0 (an edited record) add up
    assert judged(runtime(), pods(), {"warmup": 1, "warmup/0": 2}).failures == {"warmup/0": 3}


def test_an_unreadable_record_neither_crashes_nor_counts() -> None:
    odd = {"warmup/9": 2, "gone": 1, "node": "x", "warmup/": 4, "warmup/-1": 1, "warmup/1": True}
    j = judged(runtime(), pods({"tj-node-0-0"}), odd)
    # keys that name no Job are kept as they are; values that are no count are dropped
    assert j.failures == {"warmup/9": 2, "gone": 1, "warmup/": 4, "warmup/-1": 1, "node": 1}
    assert j.failed == []
    for recorded in ("3", None, [1, 2], {"node": -2}, {"node": "²"}, {"node": 1.5}):
        assert judged(runtime(), pods(), recorded).failures == {}
    assert judged(runtime(), pods(), {"warmup/²": 1}).failures == {"warmup/²": 1}  # no Job's key
    assert judged(runtime(), pods(), {"warmup/1": "2"}).failures == {"warmup/1": 2}  # a count in digits
    p = plan(trainjob(nodes=2), runtime(), pods({"tj-warmup-0-0"}), {"restarts": 0, "failures": "3"})
    assert record_of(p)["failures"] == {"warmup/0": 1}
