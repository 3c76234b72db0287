"""A replicated job's Job `activeDeadlineSeconds`, applied by kubetrain in the Job controller's
place (operator/jobdeadlines.py): each Job's start is kept in the run's record; once a Job that
has not succeeded is past its deadline it fails with reason DeadlineExceeded (the Job
controller's message, which JobSet's failurePolicy rules see) at that exact time; a whole-gang
restart, a restart of that Job alone and a suspension start it afresh."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

from trainjobs import RUNTIME, failed_condition, record_of, trainer_test_runtime

from kubetrain.jobs.trainjob.runtimerules import runtime_warnings, validate_runtime
from kubetrain.operator.status import format_time

from .test_trainplan import NOW, pod, trainjob
from .test_trainplan_jobset_policies import plan, with_warmup

Obj = dict[str, Any]
MESSAGE = "Job was active longer than specified deadline"


def runtime(deadline: int, failure_policy: Obj | None = None) -> Obj:
    rt = copy.deepcopy(RUNTIME)
    jobset = rt["spec"]["template"]["spec"]
    jobset["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"] = deadline
    if failure_policy is not None:
        jobset["failurePolicy"] = failure_policy
    return rt


def started(seconds_ago: int) -> Obj:
    return {"restarts": 0, "jobStartTimes": {"node": format_time(NOW - timedelta(seconds=seconds_ago))}}


RUNNING = [pod("tj-node-0-0"), pod("tj-node-0-1")]


def test_a_job_starts_when_its_first_pods_are_made_and_waits_for_its_deadline() -> None:
    p = plan(trainjob(nodes=2), runtime(60), [], {"restarts": 0})
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-0", "tj-node-0-1"]
    assert record_of(p)["jobStartTimes"] == {"node": format_time(NOW)}
    # running, 59 s in: no failure, a requeue at the deadline's exact time
    p = plan(trainjob(nodes=2), runtime(60), RUNNING, started(59))
    assert failed_condition(p) is None and p.delete_pods == []
    assert p.requeue_at == NOW + timedelta(seconds=1)
    # a record from before (no start): the Job starts now
    p = plan(trainjob(nodes=2), runtime(60), RUNNING, {"restarts": 0})
    assert record_of(p)["jobStartTimes"] == {"node": format_time(NOW)}
    assert p.requeue_at == NOW + timedelta(seconds=60)


def test_past_its_deadline_the_job_fails_and_so_does_the_trainjob() -> None:
    p = plan(trainjob(nodes=2), runtime(60), RUNNING, started(60))
    cond = failed_condition(p)
    assert cond is not None and cond["reason"] == "FailedJobs"
    assert cond["message"].endswith("(first failed job: tj-node-0)")
    assert ("DeadlineExceeded", f"Job tj-node-0: {MESSAGE}") in [(e.reason, e.message) for e in p.events]
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]
    assert next(s for s in p.status["jobsStatus"] if s["name"] == "node")["failed"] == 1


def test_jobset_rules_see_deadline_exceeded_and_a_restart_starts_the_job_afresh() -> None:
    policy = {
        "maxRestarts": 2,
        "rules": [
            {"action": "RestartJobSet", "onJobFailureReasons": ["DeadlineExceeded"]},
            {"action": "FailJobSet"},
        ],
    }
    p = plan(trainjob(nodes=2), runtime(60, policy), RUNNING, started(61))
    assert failed_condition(p) is None
    assert record_of(p)["restarts"] == 1 and "jobStartTimes" not in record_of(p)
    # a message pattern sees the Job controller's message
    policy["rules"][0] = {"action": "FailJobSet", "onJobFailureMessagePatterns": ["active longer than"]}
    p = plan(trainjob(nodes=2), runtime(60, policy), RUNNING, started(61))
    assert failed_condition(p)["reason"] == "FailJobSetFailurePolicyAction"  # type: ignore[index]


def test_a_single_job_restart_forgets_that_jobs_start() -> None:
    policy = {
        "maxRestarts": 2,
        "rules": [{"action": "RestartJob", "onJobFailureReasons": ["DeadlineExceeded"]}],
    }
    p = plan(trainjob(nodes=2), runtime(60, policy), RUNNING, started(90))
    assert failed_condition(p) is None
    assert "RestartJobFailurePolicyAction" in [e.reason for e in p.events]
    assert record_of(p)["jobStartTimes"] == {} and record_of(p)["jobRestarts"] == {"node": [1]}


def test_a_succeeded_job_has_no_deadline() -> None:
    rt = with_warmup()
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"] = 30
    warm = [pod("tj-warmup-0-0", phase="Succeeded"), pod("tj-warmup-0-1", phase="Succeeded")]
    state = {"restarts": 0, "jobStartTimes": {"warmup": format_time(NOW - timedelta(hours=1))}}
    p = plan(trainjob(nodes=1), rt, [*warm, pod("tj-node-0-0")], state)
    assert failed_condition(p) is None and p.delete_pods == []
    # one of its pods still running: past the deadline, it fails
    p = plan(trainjob(nodes=1), rt, [warm[0], pod("tj-warmup-0-1"), pod("tj-node-0-0")], state)
    assert failed_condition(p) is not None


def test_suspending_forgets_every_start() -> None:
    p = plan(trainjob(nodes=2, suspend=True), runtime(60), RUNNING, started(30))
    assert "jobStartTimes" not in record_of(p)


def test_admission_takes_a_non_negative_deadline_without_a_warning() -> None:
    rt = trainer_test_runtime("labelled")
    job_spec = rt["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]
    job_spec["activeDeadlineSeconds"] = 0
    assert validate_runtime(rt) == [] and runtime_warnings(rt) == []
    for bad in (-1, "60", 1.5):
        job_spec["activeDeadlineSeconds"] = bad
        assert [(e.path, e.message) for e in validate_runtime(rt)] == [
            (
                "spec.template.spec.replicatedJobs[2].template.spec.activeDeadlineSeconds",
                f"{json.dumps(bad)}: must be an integer ≥ 0",
            )
        ]
