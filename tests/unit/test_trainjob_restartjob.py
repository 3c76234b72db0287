"""JobSet's single-Job restart actions on a TrainJob (`RestartJob`,
`RestartJobAndIgnoreMaxRestarts`): the decision (jobs/trainjob/failurepolicy.py), the planner
acting on it (operator/groupactive.py, operator/jobrestarts.py) — only the failed Job's pods
deleted and made again as that Job's next attempt, the other Jobs' pods left running, counted
as JobSet counts (`jobRestarts`, `jobRestartsCountTowardsMax`, `totalRestartsCountTowardsMax`)
in the snapshot's record — JobSet's own TestApplyFailurePolicyRuleAction cases as data, and
JobSet's webhook rule (replicas ≤ 1024)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from admission import review_of
from trainjobs import failed_condition, record_of, warnings

from kubetrain.jobs.trainercrds import trainer_crds
from kubetrain.jobs.trainerrules import IN_PLACE_RESTART_MESSAGE
from kubetrain.jobs.trainjob.failurepolicy import TOO_MANY_REPLICAS, decide
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.runtimerules import validate_runtime
from kubetrain.webhook.trainer import validate_trainer

from .test_trainplan import RUNTIME, failed_jobs, pod, trainjob
from .test_trainplan_jobset_policies import names, plan

Obj = dict[str, Any]
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
JOB_ATTEMPT = "jobset.sigs.k8s.io/job-restart-attempt"
# 3 warmup Jobs of one pod each (tj-warmup-<job>-0), then 1 node Job of 2 pods
WARMUP = [f"tj-warmup-{j}-0" for j in range(3)]
NODES = ["tj-node-0-0", "tj-node-0-1"]


def runtime(*rules: Obj, max_restarts: int = 3, replicas: int = 3, **policy: Any) -> Obj:
    """The torch runtime with a `warmup` replicated job of `replicas` one-pod Jobs (backoffLimit
    0, restartPolicy Never: one failed pod fails its Job) before `node`, and a failurePolicy."""
    rt = copy.deepcopy(RUNTIME)
    spec = rt["spec"]["template"]["spec"]
    warmup = copy.deepcopy(spec["replicatedJobs"][0])
    warmup["name"], warmup["replicas"] = "warmup", replicas
    warmup["template"]["metadata"] = {}
    job = warmup["template"]["spec"]
    job.update(parallelism=1, completions=1, backoffLimit=0)
    job["template"]["spec"]["restartPolicy"] = "Never"
    spec["replicatedJobs"].insert(0, warmup)
    spec["failurePolicy"] = {"maxRestarts": max_restarts, "rules": list(rules), **policy}
    return rt


def rule(action: str, *targets: str, name: str = "r") -> Obj:
    return {"name": name, "action": action, **({"targetReplicatedJobs": list(targets)} if targets else {})}


def pods(
    failed: set[str] | frozenset[str] = frozenset(), job_attempts: dict[str, int] | None = None
) -> list[Obj]:
    """Every pod Running but those `failed`, each labelled with its Job's attempt (0 unless
    `job_attempts` says otherwise)."""
    out = []
    for name in [*WARMUP, *NODES]:
        p = pod(name, phase="Failed" if name in failed else "Running")
        p["metadata"]["labels"][JOB_ATTEMPT] = str((job_attempts or {}).get(name, 0))
        out.append(p)
    return out


# --- the decision --------------------------------------------------------------------------------


def test_restart_job_restarts_the_first_failed_job_alone_and_counts() -> None:
    policy = runtime(rule("RestartJob"))["spec"]["template"]["spec"]["failurePolicy"]
    verdict = decide("tj", policy, failed_jobs("warmup", jobs={"warmup": 1}), 2)
    assert (verdict.restart, verdict.counts, verdict.job) == (True, True, ("warmup", 1))
    assert verdict.reason == "RestartJobFailurePolicyAction"
    assert verdict.message == "applying RestartJob failure policy action (first failed job: tj-warmup-1)"
    # the restarts counted so far (whole and single-Job together) reach maxRestarts: it fails
    exhausted = decide("tj", policy, failed_jobs("warmup", jobs={"warmup": 1}), 3)
    assert (exhausted.restart, exhausted.job, exhausted.reason) == (False, None, "ReachedMaxRestarts")
    assert (
        exhausted.message
        == "jobset failed due to reaching max number of restarts (first failed job: tj-warmup-1)"
    )


def test_restart_job_and_ignore_max_restarts_never_checks_nor_counts() -> None:
    policy = runtime(rule("RestartJobAndIgnoreMaxRestarts"), max_restarts=0)["spec"]["template"]["spec"]
    verdict = decide("tj", policy["failurePolicy"], failed_jobs("node"), 99)
    assert (verdict.restart, verdict.counts, verdict.job) == (True, False, ("node", 0))
    assert verdict.reason == "RestartJobAndIgnoreMaxRestartsFailurePolicyAction"
    assert verdict.message == (
        "applying RestartJobAndIgnoreMaxRestarts failure policy action (first failed job: tj-node-0)"
    )


def test_rules_pick_the_action_per_replicated_job_as_in_the_kep() -> None:
    # KEP 262, story 6, example 2: the leader's failure restarts everything, a worker's its Job
    policy = runtime(
        rule("RestartJobSet", "node", name="leader"), rule("RestartJob", "warmup", name="worker")
    )
    fp = policy["spec"]["template"]["spec"]["failurePolicy"]
    assert decide("tj", fp, failed_jobs("warmup", jobs={"warmup": 2}), 0).job == ("warmup", 2)
    whole = decide("tj", fp, failed_jobs("warmup", "node", jobs={"warmup": 2}), 0)
    assert (whole.job, whole.reason) == (None, "RestartJobSetFailurePolicyAction")
    assert whole.message.endswith("(first failed job: tj-node-0)")
    # no rule matches a failed job: the default action, RestartJobSet, for the first failed job
    other = runtime(rule("RestartJob", "warmup"))["spec"]["template"]["spec"]["failurePolicy"]
    assert decide("tj", other, failed_jobs("node"), 0).job is None


# JobSet v0.12's TestFindFirstFailedPolicyRuleAndJob, where it maps: a kubetrain job fails only
# with `BackoffLimitExceeded` (JobSet's case reasons DeadlineExceeded / FailedIndexes never match),
# and of several jobs that failed at the same time the first in the runtime's order is taken
# (JobSet's tie-break; the order by failure time: test_trainjob_failureorder.py).
def test_jobsets_rule_matching_cases() -> None:
    def by(action: str, *reasons: str, targets: tuple[str, ...] = ()) -> Obj:
        return {"name": action, "action": action, "onJobFailureReasons": list(reasons)} | (
            {"targetReplicatedJobs": list(targets)} if targets else {}
        )

    rule1 = by("RestartJob", "BackoffLimitExceeded")
    rule2 = by("RestartJobAndIgnoreMaxRestarts", "DeadlineExceeded")
    rule3 = by("FailJobSet", "FailedIndexes")
    unmatched = by("FailJobSet", targets=("fakeReplicatedJobName",))
    jobs = {"warmup": 1}
    # no rules, or no rule matching: the default RestartJobSet, for the first failed job
    for rules in ([], [rule2], [unmatched]):
        verdict = decide(
            "tj", {"maxRestarts": 1, "rules": rules}, failed_jobs("warmup", "node", jobs=jobs), 0
        )
        assert (verdict.reason, verdict.job) == ("RestartJobSetFailurePolicyAction", None), rules
        assert verdict.message.endswith("(first failed job: tj-warmup-1)")
    # the first rule (in order) matching the failure decides
    for rules in ([rule1, rule2, rule3], [rule2, rule3, rule1], [unmatched, rule1]):
        verdict = decide(
            "tj", {"maxRestarts": 1, "rules": rules}, failed_jobs("warmup", "node", jobs=jobs), 0
        )
        assert (verdict.reason, verdict.job) == ("RestartJobFailurePolicyAction", ("warmup", 1)), rules


# JobSet v0.12's TestApplyFailurePolicyRuleAction (pkg/controllers/failure_policy_test.go), the
# cases with the RestartJob feature on, on a replicated job of one Job (here `warmup`, replicas 1):
# (name, action, maxRestarts, status before as the run's record, record after, Failed reason).
# One whole restart and one of `warmup`'s Job alone, both counted: 2 towards maxRestarts.
AT_TWO_ONE_EACH: Obj = {
    "restarts": 1,
    "countedRestarts": 1,
    "jobRestarts": {"warmup": [1]},
    "jobRestartsCountTowardsMax": {"warmup": [1]},
}
JOBSET_CASES: list[tuple[str, str, int, Obj, Obj, str | None]] = [
    (
        "RestartJobSet when restarts < maxRestarts increments restarts count and counts towards max",
        "RestartJobSet",
        5,
        {"restarts": 1, "countedRestarts": 1},
        {"restarts": 2, "countedRestarts": 2},
        None,
    ),
    (
        "RestartJobSet action when restarts >= maxRestarts fails the jobset",
        "RestartJobSet",
        2,
        {"restarts": 2, "countedRestarts": 2},
        {"restarts": 2, "countedRestarts": 2},
        "ReachedMaxRestarts",
    ),
    (
        "RestartJobSetAndIgnoreMaxRestarts action does not count toward max restarts",
        "RestartJobSetAndIgnoreMaxRestarts",
        1,
        {"restarts": 1, "countedRestarts": 1},
        {"restarts": 2, "countedRestarts": 1},
        None,
    ),
    (
        "RestartJob action when combined restarts < maxRestarts increments jobRestart count and counts "
        "towards max",
        "RestartJob",
        5,
        {"restarts": 0, "countedRestarts": 0, "jobRestarts": {"warmup": [0]}},
        {
            "restarts": 0,
            "countedRestarts": 0,
            "jobRestarts": {"warmup": [1]},
            "jobRestartsCountTowardsMax": {"warmup": [1]},
        },
        None,
    ),
    (
        "RestartJob action when combined restarts >= maxRestarts fails the jobset",
        "RestartJob",
        2,
        AT_TWO_ONE_EACH,
        AT_TWO_ONE_EACH,
        "ReachedMaxRestarts",
    ),
    (
        "RestartJobSet action when combined restarts >= maxRestarts and a previous individual restart "
        "fails the jobset",
        "RestartJobSet",
        2,
        AT_TWO_ONE_EACH,
        AT_TWO_ONE_EACH,
        "ReachedMaxRestarts",
    ),
    (
        "RestartJobAndIgnoreMaxRestarts action does not count toward max restarts",
        "RestartJobAndIgnoreMaxRestarts",
        1,
        {"restarts": 0, "countedRestarts": 0, "jobRestarts": {"warmup": [1]}},
        {"restarts": 0, "countedRestarts": 0, "jobRestarts": {"warmup": [2]}},
        None,
    ),
]


@pytest.mark.parametrize(("name", "action", "limit", "before", "after", "reason"), JOBSET_CASES)
def test_jobsets_own_cases(
    name: str, action: str, limit: int, before: Obj, after: Obj, reason: str | None
) -> None:
    rt = runtime(rule(action), max_restarts=limit, replicas=1)
    # the failed Job's pod carries its current attempt (the record's jobRestarts)
    attempt = (before.get("jobRestarts") or {}).get("warmup", [0])[0]
    observed = [
        p
        for p in pods({"tj-warmup-0-0"}, {"tj-warmup-0-0": attempt})
        if p["metadata"]["name"] in ("tj-warmup-0-0", *NODES)
    ]
    for x in observed:  # of the current whole attempt
        x["metadata"]["labels"][ATTEMPT] = str(before["restarts"])
    p = plan(trainjob(nodes=2), rt, observed, {**before, "failures": {}})
    record = record_of(p)
    assert {k: record.get(k) for k in after} == after, name
    for key in ("jobRestarts", "jobRestartsCountTowardsMax"):  # absent where JobSet has none
        if key not in after:
            assert key not in record, name
    failed = failed_condition(p)
    assert (failed["reason"] if failed else None) == reason, name


# --- the planner ---------------------------------------------------------------------------------


def test_only_the_failed_jobs_pods_are_recreated_the_others_keep_running() -> None:
    rt = runtime(rule("RestartJob", "warmup"))
    p = plan(trainjob(nodes=2), rt, pods({"tj-warmup-1-0"}), {"restarts": 0, "failures": {}})
    assert p.delete_pods == ["tj-warmup-1-0"]  # Job 1's pod alone; Jobs 0 and 2 and the nodes stay
    assert names(p) == []  # its slot is held until the old pod is gone
    assert failed_condition(p) is None
    assert warnings(p) == [
        (
            "RestartJobFailurePolicyAction",
            "applying RestartJob failure policy action (first failed job: tj-warmup-1)",
        )
    ]
    assert p.restarts == 1  # kubetrain_jobs_restarted_total, once the record is written
    record = record_of(p)
    assert record["restarts"] == 0  # no whole-gang restart
    assert record["jobRestarts"] == {"warmup": [0, 1, 0]}
    assert record["jobRestartsCountTowardsMax"] == {"warmup": [0, 1, 0]}
    assert record["failures"] == {}  # the restarted Job's count starts again
    # the old pod gone: made again as Job 1's attempt 1, in the same whole attempt 0
    rest = [x for x in pods() if x["metadata"]["name"] != "tj-warmup-1-0"]
    again = plan(trainjob(nodes=2), rt, rest, record)
    [made] = again.create_pods
    assert made["metadata"]["name"] == "tj-warmup-1-0"
    assert (
        made["metadata"]["labels"][JOB_ATTEMPT] == "1" and made["metadata"]["annotations"][JOB_ATTEMPT] == "1"
    )
    assert made["metadata"]["labels"][ATTEMPT] == "0"
    assert again.delete_pods == [] and warnings(again) == []
    assert again.update_children == []  # the record as it was: nothing to write


def test_a_pod_of_a_jobs_earlier_attempt_is_deleted_and_holds_its_slot() -> None:
    rt = runtime(rule("RestartJob"))
    state = {
        "restarts": 0,
        "jobRestarts": {"warmup": [0, 1, 0]},
        "jobRestartsCountTowardsMax": {"warmup": [0, 1, 0]},
    }
    # Job 1's pod still labelled with attempt 0 (e.g. its delete not yet seen): deleted again
    p = plan(trainjob(nodes=2), rt, pods(), state)
    assert p.delete_pods == ["tj-warmup-1-0"] and names(p) == []
    # a pod of an earlier Job attempt does not count for success nor fails its Job
    failed_old = pods({"tj-warmup-1-0"})
    p = plan(trainjob(nodes=2), rt, failed_old, state)
    assert warnings(p) == [] and failed_condition(p) is None
    # terminating: left alone, its slot held (BlockingRecreate waits for it too)
    going = pods()
    going[1]["metadata"]["deletionTimestamp"] = "2026-11-25T12:00:00Z"
    assert plan(trainjob(nodes=2), rt, going, state).delete_pods == []
    blocking = runtime(rule("RestartJob"), restartStrategy="BlockingRecreate")
    without = [x for x in pods() if x["metadata"]["name"] != "tj-warmup-1-0"]
    assert names(plan(trainjob(nodes=2), blocking, [*without, going[1]], state)) == []
    assert names(plan(trainjob(nodes=2), blocking, without, state)) == ["tj-warmup-1-0"]


def test_several_failed_jobs_restart_one_after_the_other_until_max_restarts() -> None:
    rt = runtime(rule("RestartJob"), max_restarts=3)
    failed = {"tj-warmup-0-0", "tj-warmup-2-0"}
    p = plan(trainjob(nodes=2), rt, pods(failed), {"restarts": 0, "countedRestarts": 1})
    assert sorted(p.delete_pods) == sorted(failed)
    assert [m for _, m in warnings(p)] == [
        "applying RestartJob failure policy action (first failed job: tj-warmup-0)",
        "applying RestartJob failure policy action (first failed job: tj-warmup-2)",
    ]
    assert record_of(p)["jobRestartsCountTowardsMax"] == {"warmup": [1, 0, 1]}
    assert p.restarts == 2
    # one whole restart counted before and room for one more: the second failed Job fails it
    p = plan(
        trainjob(nodes=2), runtime(rule("RestartJob"), max_restarts=2), pods(failed), {"countedRestarts": 1}
    )
    assert [r for r, _ in warnings(p)] == ["RestartJobFailurePolicyAction", "ReachedMaxRestarts"]
    failed_cond = failed_condition(p)
    assert failed_cond is not None and failed_cond["reason"] == "ReachedMaxRestarts"
    assert (
        failed_cond["message"]
        == "jobset failed due to reaching max number of restarts (first failed job: tj-warmup-2)"
    )
    assert record_of(p)["jobRestarts"] == {"warmup": [1, 0, 0]}  # the restart it made is kept


def test_a_later_rule_can_fail_the_job_after_a_single_job_restart() -> None:
    rt = runtime(rule("RestartJob", "warmup"), rule("FailJobSet", "node", name="f"))
    p = plan(trainjob(nodes=2), rt, pods({"tj-warmup-1-0"}), {})
    assert failed_condition(p) is None
    rt_node_zero = copy.deepcopy(rt)
    node_job = rt_node_zero["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]
    node_job["backoffLimit"] = 0
    node_job["template"]["spec"]["restartPolicy"] = "Never"
    p = plan(trainjob(nodes=2), rt_node_zero, pods({"tj-warmup-1-0", "tj-node-0-1"}), {})
    assert [r for r, _ in warnings(p)] == ["RestartJobFailurePolicyAction", "FailJobSetFailurePolicyAction"]
    cond = failed_condition(p)
    assert cond is not None and cond["message"].endswith("(first failed job: tj-node-0)")


def test_a_whole_gang_restart_keeps_the_jobs_counts_and_labels_both_attempts() -> None:
    rt = runtime(rule("RestartJob", "warmup"), max_restarts=5)
    state = {
        "restarts": 0,
        "jobRestarts": {"warmup": [0, 2, 0]},
        "jobRestartsCountTowardsMax": {"warmup": [0, 1, 0]},
    }
    node_failed = runtime(rule("RestartJob", "warmup"), max_restarts=5)
    node_job = node_failed["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]
    node_job["backoffLimit"] = 0
    node_job["template"]["spec"]["restartPolicy"] = "Never"
    p = plan(trainjob(nodes=2), node_failed, pods({"tj-node-0-0"}, {"tj-warmup-1-0": 2}), state)
    assert [r for r, _ in warnings(p)] == ["RestartJobSetFailurePolicyAction"]
    record = record_of(p)
    assert (record["restarts"], record["countedRestarts"]) == (1, 1)
    assert record["jobRestarts"] == {"warmup": [0, 2, 0]}  # as JobSet: a whole restart keeps them
    again = plan(trainjob(nodes=2), rt, [], record)
    made = {x["metadata"]["name"]: x["metadata"]["labels"] for x in again.create_pods}
    assert made["tj-warmup-1-0"][JOB_ATTEMPT] == "2" and made["tj-warmup-1-0"][ATTEMPT] == "1"
    assert made["tj-warmup-0-0"][JOB_ATTEMPT] == "0" and made["tj-node-0-0"][JOB_ATTEMPT] == "0"


def test_a_stall_counts_the_jobs_restarts_towards_max_restarts() -> None:
    from datetime import timedelta

    from . import test_trainprogress as tp

    rt = copy.deepcopy(tp.RUNTIME)
    rt["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 2, "rules": [rule("RestartJob")]}
    job = tp.trainjob(reported=tp.NOW - timedelta(seconds=61))
    node_pods = [tp.pod(n, attempt=1) for n in NODES]
    for x in node_pods:
        x["metadata"]["labels"][JOB_ATTEMPT] = "1"
    jobs = {"jobRestarts": {"node": [1]}, "jobRestartsCountTowardsMax": {"node": [1]}}
    # one whole restart and one of the node Job counted: maxRestarts 2 reached, the stall fails it
    used_up = {"restarts": 1, "countedRestarts": 1, **jobs}
    p = tp.plan(job, [*node_pods], [tp.snapshot(job, rt, used_up), tp.ca_map(job)], rt)
    cond = failed_condition(p)
    assert cond is not None and cond["reason"] == "ProgressDeadlineExceeded"
    # the Job's restart alone: room for one whole restart, which keeps the Job's counts
    room = {"restarts": 0, "countedRestarts": 0, **jobs}
    for x in node_pods:
        x["metadata"]["labels"][ATTEMPT] = "0"
    p = tp.plan(job, node_pods, [tp.snapshot(job, rt, room), tp.ca_map(job)], rt)
    [event] = [e for e in p.events if e.reason == "ProgressDeadlineExceeded"]
    assert "restart 2 of maxRestarts 2" in event.message
    record = (
        record_of(p)
        if len(p.update_children) == 1
        else json.loads(
            next(c for c in p.update_children if c["metadata"]["name"] == "tj-runtime-snapshot")["data"][
                "state"
            ]
        )
    )
    assert (record["restarts"], record["countedRestarts"]) == (1, 1)
    assert record["jobRestartsCountTowardsMax"] == {"node": [1]}


def test_without_a_single_job_rule_pods_have_no_job_restart_attempt() -> None:
    p = plan(trainjob(nodes=2), runtime(rule("RestartJobSet")), [])
    assert all(JOB_ATTEMPT not in x["metadata"]["labels"] for x in p.create_pods)
    assert all(JOB_ATTEMPT not in x["metadata"]["annotations"] for x in p.create_pods)
    p = plan(trainjob(nodes=2), runtime(rule("RestartJobAndIgnoreMaxRestarts")), [])
    assert {x["metadata"]["labels"][JOB_ATTEMPT] for x in p.create_pods} == {"0"}


def test_a_record_that_is_not_counts_reads_as_zero() -> None:
    rt = runtime(rule("RestartJob"))
    state = {"jobRestarts": {"warmup": ["x", -1, True], "gone": [4]}, "jobRestartsCountTowardsMax": "no"}
    p = plan(trainjob(nodes=2), rt, pods({"tj-warmup-2-0"}), state)
    record = record_of(p)
    assert record["jobRestarts"] == {"warmup": [0, 0, 1]}
    assert record["jobRestartsCountTowardsMax"] == {"warmup": [0, 0, 1]}
    # a list shorter than the Jobs is padded
    p = plan(
        trainjob(nodes=2), rt, pods({"tj-warmup-2-0"}, {"tj-warmup-0-0": 1}), {"jobRestarts": {"warmup": [1]}}
    )
    assert record_of(p)["jobRestarts"] == {"warmup": [1, 0, 1]}


# --- admission: JobSet's webhook rule ------------------------------------------------------------


def test_replicas_over_1024_are_refused_with_a_single_job_rule() -> None:
    path = "spec.template.spec.replicatedJobs[0].replicas"
    for action in ("RestartJob", "RestartJobAndIgnoreMaxRestarts"):
        errors = validate_runtime(runtime(rule(action), replicas=1025))
        assert [(e.path, e.message) for e in errors if e.path == path] == [(path, TOO_MANY_REPLICAS)]
        assert "replicas > 1024" in TOO_MANY_REPLICAS
        assert not [e for e in validate_runtime(runtime(rule(action), replicas=1024)) if e.path == path]
    assert not [e for e in validate_runtime(runtime(rule("RestartJobSet"), replicas=1025)) if e.path == path]
    # a runtime stored without admission: the TrainJob cannot run it (as JobSet's webhook refuses)
    resolved, errors = resolve(trainjob(nodes=2), runtime(rule("RestartJob"), replicas=1025))
    assert resolved is None
    assert [e.path for e in errors] == [f"runtime.{path}"]
    p = plan(trainjob(nodes=2), runtime(rule("RestartJob"), replicas=1025), [])
    cond = failed_condition(p)
    assert p.create_pods == [] and cond is not None
    assert cond["reason"] == "TrainingRuntimeNotSupported" and cond["message"].startswith(f"runtime.{path}")


def test_the_runtime_crds_accept_every_jobset_action() -> None:
    for crd in trainer_crds()[1:]:
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        jobset = schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
        rules = jobset["properties"]["failurePolicy"]["properties"]["rules"]["items"]
        assert rules["properties"]["action"]["enum"] == [
            "FailJobSet",
            "RestartJobSet",
            "RestartJobSetAndIgnoreMaxRestarts",
            "RestartJob",
            "RestartJobAndIgnoreMaxRestarts",
        ]


IN_PLACE = "spec.template.spec.failurePolicy.restartStrategy"


def test_in_place_restart_is_refused_naming_the_field_the_values_and_why() -> None:
    """JobSet's `restartStrategy: InPlaceRestart` needs its restart agent sidecar, which reads
    the JobSet object's status; kubetrain makes no JobSet object. The webhook (and `kubetrain
    validate`) refuse it with the runtime CRD rule's message, in one line; a runtime stored past
    admission fails its TrainJobs (TrainingRuntimeNotSupported) with no pod made."""
    errors = validate_runtime(runtime(restartStrategy="InPlaceRestart"))
    assert [(e.path, e.message) for e in errors] == [(IN_PLACE, IN_PLACE_RESTART_MESSAGE)]
    assert str(errors[0]) == (
        f'{IN_PLACE}: Invalid: InPlaceRestart is not supported, supported values: "Recreate", '
        '"BlockingRecreate": JobSet\'s in-place restart needs its restart agent sidecar, which reads '
        "the JobSet object's status, and kubetrain runs a TrainJob's pods without a JobSet object"
    )
    response = validate_trainer(review_of(runtime(restartStrategy="InPlaceRestart")))
    assert not response.allowed and "\n" not in response.message
    assert f"{IN_PLACE}: Invalid: InPlaceRestart is not supported" in response.message
    for strategy in ("Recreate", "BlockingRecreate"):
        assert validate_runtime(runtime(restartStrategy=strategy)) == []
    stored = runtime(restartStrategy="InPlaceRestart")
    resolved, errors = resolve(trainjob(nodes=2), stored)
    assert resolved is None and [e.path for e in errors] == [f"runtime.{IN_PLACE}"]
    p = plan(trainjob(nodes=2), stored, [])
    cond = failed_condition(p)
    assert p.create_pods == [] and cond is not None
    assert cond["reason"] == "TrainingRuntimeNotSupported" and cond["message"].startswith(
        f"runtime.{IN_PLACE}"
    )
