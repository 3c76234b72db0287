"""Which failed Job a TrainJob's failure policy acts on when several Jobs have failed: JobSet's
order by failure time (its failure_policy.go: `findFirstFailedJob`,
`findFirstFailedPolicyRuleAndJob`) and its tie-break (the Job listed first keeps the pick on an
equal time), in the decision (jobs/failureorder.py, jobs/trainjob/failurepolicy.py), in the
failure times read from pods (operator/failuretime.py) and in the planner acting on several
Jobs failing in one reconcile (operator/groupactive.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubetrain.jobs.failureorder import FailedJob, FailureOrder
from kubetrain.jobs.trainjob.failurepolicy import decide
from kubetrain.operator.failuretime import last_restart_at, pod_failed_at
from kubetrain.operator.groupfailure import judge

from .test_trainjob_restartjob import JOB_ATTEMPT, WARMUP, pods, record_of, rule, runtime, warnings
from .test_trainjob_shape import shape_of
from .test_trainplan import pod, trainjob
from .test_trainplan_jobset_policies import plan

Obj = dict[str, Any]
T = datetime(2026, 1, 1, 12, tzinfo=UTC)


def first_of(failed: list[FailedJob]) -> FailedJob | None:
    """JobSet's findFirstFailedJob: the Job that failed first (ties: the earlier listed)."""
    return FailureOrder(failed).first()


def hours(n: float) -> datetime:
    return T + timedelta(hours=n)


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- JobSet v0.12's TestFindFirstFailedJob ---------------------------------------------------------


def test_jobsets_find_first_failed_job_cases() -> None:
    assert first_of([]) is None  # "No failed jobs"
    single = FailedJob("rjob", 1, hours(-1))
    assert first_of([single]) == single  # "Single failed job"
    # "Multiple failed jobs, earliest first": job2 failed 5h ago, job1 3h ago
    job1, job2 = FailedJob("rjob", 1, hours(-3)), FailedJob("rjob", 2, hours(-5))
    assert first_of([job1, job2]) == job2


def test_equal_times_keep_the_job_listed_first_and_times_compare_to_the_second() -> None:
    a, b = FailedJob("warmup", 2, T), FailedJob("node", 0, T)
    assert first_of([a, b]) == a and first_of([b, a]) == b
    # metav1.Time keeps seconds: 0.9 s apart within one second is a tie, as JobSet reads it
    late_in_second = FailedJob("warmup", 0, T + timedelta(milliseconds=900))
    assert first_of([late_in_second, b]) == late_in_second
    assert first_of([FailedJob("warmup", 0, T + timedelta(seconds=1)), b]) == b


# --- JobSet v0.12's TestFindFirstFailedPolicyRuleAndJob, the cases on the order --------------------
# failedJob1 failed 6h ago, failedJob1DupEarlierFailure 12h ago, both of one replicated job with
# reason BackoffLimitExceeded (failureReason1, kubetrain's Jobs' only reason); failurePolicyRule1
# matches that reason; unmatchedFailurePolicyRule targets a replicated job that does not exist.

RULE1 = {"name": "rule1", "action": "RestartJob", "onJobFailureReasons": ["BackoffLimitExceeded"]}
RULE2 = {"name": "rule2", "action": "FailJobSet", "onJobFailureReasons": ["DeadlineExceeded"]}
UNMATCHED = {"name": "unmatched", "action": "FailJobSet", "targetReplicatedJobs": ["fakeReplicatedJobName"]}
JOB1, JOB1_EARLIER = FailedJob("warmup", 0, hours(-6)), FailedJob("warmup", 1, hours(-12))


def test_a_rule_matching_both_failed_jobs_takes_the_one_that_failed_earlier() -> None:
    # "There are 2 failed jobs, the second job failed before the first job, there is 1 failure
    # policy rule, and the failure policy rule matches both jobs"
    verdict = decide("tj", {"maxRestarts": 3, "rules": [RULE1]}, [JOB1, JOB1_EARLIER], 0)
    assert (verdict.reason, verdict.job) == ("RestartJobFailurePolicyAction", ("warmup", 1))
    assert verdict.message == "applying RestartJob failure policy action (first failed job: tj-warmup-1)"
    # "... there are 2 failure policy rules, the first failure policy does not match any of the
    # jobs, and the second failure policy rule matches both jobs"
    verdict = decide("tj", {"maxRestarts": 3, "rules": [UNMATCHED, RULE1]}, [JOB1, JOB1_EARLIER], 0)
    assert verdict.job == ("warmup", 1)


def test_no_matching_rule_or_no_policy_names_the_job_that_failed_first() -> None:
    # "the failure policy rule does not match any of the jobs": the default action, RestartJobSet,
    # for findFirstFailedJob's Job
    verdict = decide("tj", {"maxRestarts": 3, "rules": [RULE2]}, [JOB1, JOB1_EARLIER], 0)
    assert (verdict.reason, verdict.job) == ("RestartJobSetFailurePolicyAction", None)
    assert verdict.message.endswith("(first failed job: tj-warmup-1)")
    # no policy at all: FailedJobs, naming the Job that failed first, in any replicated job
    node_first = [FailedJob("warmup", 0, hours(-1)), FailedJob("node", 0, hours(-2))]
    assert decide("tj", None, node_first, 0).message == (
        "jobset failed due to one or more job failures (first failed job: tj-node-0)"
    )


def test_the_rule_order_decides_before_the_failure_time() -> None:
    # the earliest failure is the node's, but the first rule applies only to warmup's Jobs
    failed = [
        FailedJob("warmup", 2, hours(-1)),
        FailedJob("warmup", 1, hours(-3)),
        FailedJob("node", 0, hours(-9)),
    ]
    policy = {"maxRestarts": 3, "rules": [rule("RestartJob", "warmup"), rule("FailJobSet", "node", name="f")]}
    assert decide("tj", policy, failed, 0).job == ("warmup", 1)
    assert decide("tj", policy, failed[:1] + failed[2:], 0).job == ("warmup", 2)
    assert decide("tj", policy, failed[2:], 0).reason == "FailJobSetFailurePolicyAction"


# --- the failure times the pods tell ---------------------------------------------------------------


def failed_pod(name: str, finished: datetime | None, job_attempt: int = 0) -> Obj:
    p = pod(name, phase="Failed")
    p["metadata"]["labels"][JOB_ATTEMPT] = str(job_attempt)
    if finished is not None:
        p["status"]["containerStatuses"] = [
            {
                "name": "node",
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "finishedAt": stamp(finished)}},
            }
        ]
    return p


def test_a_pods_failure_time_is_its_containers_last_end_else_its_ready_transition() -> None:
    p = failed_pod("tj-warmup-0-0", hours(-1))
    p["status"]["initContainerStatuses"] = [
        {"name": "init", "state": {"terminated": {"exitCode": 0, "finishedAt": stamp(hours(-2))}}}
    ]
    assert pod_failed_at(p) == hours(-1)
    bare = failed_pod("tj-warmup-0-0", None)
    bare["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "lastTransitionTime": stamp(hours(-4))}
    ]
    assert pod_failed_at(bare) == hours(-4)
    assert pod_failed_at({"status": {}}) is None
    restarted = {
        "status": {"containerStatuses": [{"lastState": {"terminated": {"finishedAt": stamp(hours(-3))}}}]}
    }
    assert last_restart_at(restarted) == hours(-3)


def test_judge_keeps_each_failed_jobs_time() -> None:
    shape = shape_of(trainjob(nodes=2), runtime())
    slots = {("warmup", j): failed_pod(f"tj-warmup-{j}-0", hours(-j)) for j in range(3)}
    slots[("warmup", 1)] = failed_pod("tj-warmup-1-0", None)
    judged = judge(shape, slots, frozenset(), {})
    assert judged.failed_jobs == {"warmup": [0, 1, 2]}
    assert judged.failed_at == {("warmup", 0): hours(0), ("warmup", 1): None, ("warmup", 2): hours(-2)}


# --- the planner, several Jobs failing in one reconcile ----------------------------------------------


def named(p: Any) -> list[str]:
    """The Job each Warning event names, in order."""
    return [m.rpartition("first failed job: ")[2].rstrip(")") for _, m in warnings(p)]


def observed(failed: dict[str, datetime | None]) -> list[Obj]:
    out = pods(set(failed))
    for p in out:
        name = p["metadata"]["name"]
        if name in failed:
            out[out.index(p)] = failed_pod(name, failed[name])
    return out


def test_the_job_that_failed_first_restarts_first_and_the_next_meets_max_restarts() -> None:
    # warmup-2 failed an hour before warmup-0; room for one counted restart
    failed = {WARMUP[0]: hours(0), WARMUP[2]: hours(-1)}
    p = plan(trainjob(nodes=2), runtime(rule("RestartJob"), max_restarts=1), observed(failed), {})
    assert warnings(p) == [
        (
            "RestartJobFailurePolicyAction",
            "applying RestartJob failure policy action (first failed job: tj-warmup-2)",
        ),
        (
            "ReachedMaxRestarts",
            "jobset failed due to reaching max number of restarts (first failed job: tj-warmup-0)",
        ),
    ]
    assert record_of(p)["jobRestarts"] == {"warmup": [0, 0, 1]}
    # the same failures within one second: JobSet's tie-break, the runtime's (index) order
    same = {WARMUP[0]: hours(0), WARMUP[2]: hours(0)}
    p = plan(trainjob(nodes=2), runtime(rule("RestartJob"), max_restarts=1), observed(same), {})
    assert named(p) == ["tj-warmup-0", "tj-warmup-2"]
    assert record_of(p)["jobRestarts"] == {"warmup": [1, 0, 0]}


def test_a_job_whose_pods_tell_no_time_failed_when_the_reconcile_saw_it() -> None:
    # warmup-0's pod tells no time (taken as the reconcile's, the test's NOW, later); warmup-1's an
    # hour before NOW: warmup-1 is the first failed Job
    from .test_trainplan import NOW

    failed = {WARMUP[0]: None, WARMUP[1]: NOW - timedelta(hours=1)}
    p = plan(trainjob(nodes=2), runtime(rule("RestartJob"), max_restarts=1), observed(failed), {})
    assert named(p) == ["tj-warmup-1", "tj-warmup-0"]


def test_the_order_keeps_each_groups_jobs_in_failure_order_and_takes_the_first_away() -> None:
    jobs = [
        FailedJob("warmup", 0, hours(-1)),
        FailedJob("warmup", 1, hours(-3)),
        FailedJob("node", 0, hours(-2)),
    ]
    order = FailureOrder(jobs)
    assert (order.first(), order.first(["node"]), order.first(["other"])) == (jobs[1], jobs[2], None)
    with pytest.raises(ValueError, match="Job 0 of warmup is not the first failed Job of its group"):
        order.take("warmup", 0)
    order.take("warmup", 1)
    assert order.first() == jobs[2] and order.groups == ["warmup", "node"]
    order.take("node", 0)
    order.take("warmup", 0)
    assert not order and order.first() is None


def test_a_thousand_jobs_failing_in_one_reconcile_restart_alone_in_failure_order() -> None:
    """1024 one-pod Jobs (JobSet's most with a single-Job action), the last failed first: each
    restarts alone once, latest index first — and the reconcile stays linear in them."""
    from .test_trainplan import NOW

    n = 1024
    failed = {f"tj-warmup-{j}-0": NOW - timedelta(seconds=j) for j in range(n)}
    rt = runtime(rule("RestartJobAndIgnoreMaxRestarts"), replicas=n)
    everyone = [failed_pod(name, at) for name, at in failed.items()]
    everyone += [x for x in pods() if x["metadata"]["name"].startswith("tj-node")]
    p = plan(trainjob(nodes=2), rt, everyone, {})
    assert named(p) == [f"tj-warmup-{j}" for j in reversed(range(n))]
    assert record_of(p)["jobRestarts"] == {"warmup": [1] * n}
