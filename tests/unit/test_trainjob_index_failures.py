"""A replicated job's Job `backoffLimitPerIndex`, `maxFailedIndexes` and the `FailIndex` rule
action, applied by kubetrain in the Job controller's place (operator/indexfailure.py through
operator/groupfailure.py): failures counted per completion index, a failed index kept and not
retried while the Job's other indexes go on, the Job failed with `FailedIndexes` once every index
finished or with `MaxFailedIndexesExceeded` past the cap, and the runtime's admission by the Job
API's rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from trainjobs import RUNTIME, failed_condition, record_of, trainer_test_runtime, warnings

from kubetrain.jobs.trainjob.runtimerules import runtime_warnings, validate_runtime
from kubetrain.operator import indexfailure
from kubetrain.operator.groupfailure import forget_job, judge, read_index_record, read_record
from kubetrain.operator.slots import slot_pods

from .test_groupfailure_jobs import WARMUP
from .test_groupfailure_jobs import runtime as warmup_runtime
from .test_trainjob_podfailurepolicy import failed_pod
from .test_trainjob_shape import shape_of
from .test_trainplan import pod, trainjob
from .test_trainplan_jobset_policies import plan

Obj = dict[str, Any]
FAIL_INDEX_ON_42 = {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}
NODES = ["tj-node-0-0", "tj-node-0-1", "tj-node-0-2"]


def runtime(
    per_index: int = 1, rules: list[Obj] | None = None, failure_policy: Obj | None = None, **job: Any
) -> Obj:
    rt = copy.deepcopy(RUNTIME)
    jobset = rt["spec"]["template"]["spec"]
    job_spec = jobset["replicatedJobs"][0]["template"]["spec"]
    job_spec.pop("backoffLimit", None)  # batch/v1's default with backoffLimitPerIndex: MaxInt32
    job_spec.update(backoffLimitPerIndex=per_index, **job)
    if rules is not None:
        job_spec["podFailurePolicy"] = {"rules": rules}
    job_spec["template"]["spec"]["restartPolicy"] = "Never"
    if failure_policy is not None:
        jobset["failurePolicy"] = failure_policy
    return rt


def created(p: Any) -> list[str]:
    return [x["metadata"]["name"] for x in p.create_pods]


# --- the planner ------------------------------------------------------------------------------


def test_a_failure_counts_against_its_index_and_the_pod_is_made_again_below_the_limit() -> None:
    p = plan(
        trainjob(nodes=3), runtime(per_index=1), [failed_pod(containers={"node": 1}), *map(pod, NODES[1:])]
    )
    assert failed_condition(p) is None
    assert p.delete_pods == ["tj-node-0-0"]
    assert record_of(p)["failures"] == {"node": 1, "node#0": 1}


def test_an_index_past_its_limit_is_kept_and_not_retried_while_the_others_go_on() -> None:
    """backoffLimitPerIndex 1: the second failure of index 0 fails the index, not the Job — its
    pod stays (for its logs), no pod is made for it, indexes 1 and 2 keep running. Seen again the
    same Failed pod counts nothing more; deleted, its slot is still not made again."""
    state = {"restarts": 0, "failures": {"node": 1, "node#0": 1}}
    pods = [failed_pod(containers={"node": 1}), *map(pod, NODES[1:])]
    p = plan(trainjob(nodes=3), runtime(per_index=1), pods, state)
    assert failed_condition(p) is None
    assert p.delete_pods == [] and created(p) == []
    after = record_of(p)
    assert after["failures"] == {"node": 2, "node#0": 2}
    again = plan(trainjob(nodes=3), runtime(per_index=1), pods, after)
    assert failed_condition(again) is None and again.delete_pods == [] and again.update_children == []
    gone = plan(trainjob(nodes=3), runtime(per_index=1), [pod(n) for n in NODES[1:]], after)
    assert created(gone) == [] and failed_condition(gone) is None


def test_the_job_fails_with_failed_indexes_once_every_index_finished() -> None:
    """Index 0 failed, 1 still running: the Job goes on; once 1 and 2 succeeded the Job has
    failed (reason FailedIndexes, the Job controller's message) and, without a JobSet
    failurePolicy, so has the TrainJob."""
    state = {"restarts": 0, "failures": {"node": 2, "node#0": 2}}
    kept = failed_pod(containers={"node": 1})
    running = plan(
        trainjob(nodes=3),
        runtime(),
        [kept, pod(NODES[1]), pod(NODES[2], phase="Succeeded", ready=False)],
        state,
    )
    assert failed_condition(running) is None
    done = [kept, *(pod(n, phase="Succeeded", ready=False) for n in NODES[1:])]
    p = plan(trainjob(nodes=3), runtime(), done, state)
    cond = failed_condition(p)
    assert cond is not None and cond["reason"] == "FailedJobs"
    assert ("FailedIndexes", "Job has failed indexes") in warnings(p)


def test_more_failed_indexes_than_max_failed_indexes_fail_the_job_at_once() -> None:
    """maxFailedIndexes 1: one failed index is tolerated; a second fails the Job at once, reason
    MaxFailedIndexesExceeded, which a JobSet rule's onJobFailureReasons sees."""
    policy = {
        "maxRestarts": 3,
        "rules": [
            {"action": "FailJobSet", "onJobFailureReasons": ["MaxFailedIndexesExceeded"]},
            {"action": "RestartJobSet"},
        ],
    }
    rt = runtime(per_index=0, maxFailedIndexes=1, failure_policy=policy)
    one = plan(trainjob(nodes=3), rt, [failed_pod(containers={"node": 1}), *map(pod, NODES[1:])])
    assert failed_condition(one) is None and record_of(one)["failures"] == {"node": 1, "node#0": 1}
    two = [failed_pod(containers={"node": 1}), failed_pod(NODES[1], containers={"node": 1}), pod(NODES[2])]
    p = plan(trainjob(nodes=3), rt, two, record_of(one))
    cond = failed_condition(p)
    assert cond is not None and cond["reason"] == "FailJobSetFailurePolicyAction"
    assert (
        "MaxFailedIndexesExceeded",
        "Job has exceeded the specified maximal number of failed indexes",
    ) in warnings(p)


def test_fail_index_fails_the_index_at_once_and_other_failures_are_retried() -> None:
    """backoffLimitPerIndex 3: exit 42 matches the FailIndex rule — index 0 failed at once, its pod
    kept; exit 1 on index 1 is retried."""
    rt = runtime(per_index=3, rules=[FAIL_INDEX_ON_42])
    pods = [failed_pod(containers={"node": 42}), failed_pod(NODES[1], containers={"node": 1}), pod(NODES[2])]
    p = plan(trainjob(nodes=3), rt, pods)
    assert failed_condition(p) is None
    assert p.delete_pods == ["tj-node-0-1"]
    assert record_of(p)["failures"] == {"node": 2, "node#0": 4, "node#1": 1}


def test_with_backoff_limit_per_index_the_jobs_backoff_limit_defaults_to_max_int32() -> None:
    """batch/v1's SetDefaults_Job: many failures spread over indexes do not fail the Job."""
    state = {"restarts": 0, "failures": {"node": 1000, "node#1": 1}}
    p = plan(
        trainjob(nodes=3),
        runtime(per_index=5),
        [failed_pod(containers={"node": 1}), *map(pod, NODES[1:])],
        state,
    )
    assert failed_condition(p) is None and record_of(p)["failures"]["node"] == 1001
    # an explicit backoffLimit still counts every failure of the Job
    limited = plan(
        trainjob(nodes=3),
        runtime(per_index=5, backoffLimit=2),
        [failed_pod(containers={"node": 1}), *map(pod, NODES[1:])],
        {"restarts": 0, "failures": {"node": 2}},
    )
    assert failed_condition(limited)["reason"] == "FailedJobs"  # type: ignore[index]


def test_a_restarted_job_starts_its_indexes_over() -> None:
    """JobSet's RestartJob on a Job that failed through its indexes: the Job's own and its
    indexes' counts are forgotten, other Jobs' kept, and its failed index is made again."""
    rt = runtime(per_index=0, failure_policy={"maxRestarts": 3, "rules": [{"action": "RestartJob"}]})
    pods = [failed_pod(containers={"node": 1}), *(pod(n, phase="Succeeded", ready=False) for n in NODES[1:])]
    p = plan(trainjob(nodes=3), rt, pods, {"restarts": 0, "failures": {"node": 1, "node#0": 1}})
    assert failed_condition(p) is None
    assert sorted(p.delete_pods) == NODES
    assert record_of(p)["failures"] == {}


def test_indexes_are_counted_per_job_of_a_step_of_several_jobs() -> None:
    """4 warmup Jobs of 2 pods, backoffLimitPerIndex 0: a failure of tj-warmup-1-1 fails index 1
    of Job 1 alone (slot 3, not made again); index 1 of the other Jobs, and Job 1's index 0, go
    on. Job 1 fails (FailedIndexes) once its index 0 succeeded; the other Jobs have not."""
    rt = warmup_runtime()
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimitPerIndex"] = 0
    shape = shape_of(trainjob(nodes=2), rt)
    observed = [pod(n, phase="Failed" if n == "tj-warmup-1-1" else "Running") for n in WARMUP]
    first = judge(shape, slot_pods(shape, observed)[0], set(), {})
    assert first.failures == {"warmup/1": 1, "warmup/1#1": 1}
    assert first.delete == [] and first.failed_slots == {("warmup", 3)} and first.failed_jobs == {}
    observed[2] = pod("tj-warmup-1-0", phase="Succeeded", ready=False)
    done = judge(shape, slot_pods(shape, observed)[0], set(), first.failures)
    assert done.failed_jobs == {"warmup": [1]}
    assert done.reasons == {("warmup", 1): ("FailedIndexes", "Job has failed indexes")}
    assert done.failures == first.failures  # the kept pod is not counted again


# --- the record ---------------------------------------------------------------------------------


def test_index_keys_are_read_per_job_and_keys_naming_no_index_are_kept() -> None:
    shape = shape_of(trainjob(), warmup_runtime())  # 4 warmup Jobs of 2 pods, 1 node Job of 2
    recorded = {"warmup/1": 2, "warmup/1#0": 1, "warmup/3#1": 2, "node#1": 1, "node#2": 5, "gone#0": 3}
    counts, other = read_record(shape, recorded)
    assert counts == {("warmup", 1): 2}
    indexes, rest = read_index_record(shape, other)
    assert indexes == {("warmup", 1, 0): 1, ("warmup", 3, 1): 2, ("node", 0, 1): 1}
    assert rest == {"node#2": 5, "gone#0": 3}  # index 2 of a 2-pod Job, an unknown group
    failures = dict(recorded)
    forget_job(shape, failures, "warmup", 1)
    assert failures == {"warmup/3#1": 2, "node#1": 1, "node#2": 5, "gone#0": 3}


def test_a_job_fails_through_its_indexes_only_when_every_index_finished() -> None:
    job = indexfailure.JobIndexes
    assert indexfailure.job_verdict(job(3, frozenset({0}), frozenset({1})), None) is None
    assert indexfailure.job_verdict(job(3, frozenset({0}), frozenset({1, 2})), None) == (
        "FailedIndexes",
        "Job has failed indexes",
    )
    assert indexfailure.job_verdict(job(3, frozenset(), frozenset({0, 1, 2})), None) is None
    assert (
        indexfailure.job_verdict(job(3, frozenset({0, 1}), frozenset()), 1)[0] == "MaxFailedIndexesExceeded"
    )  # type: ignore[index]
    assert indexfailure.job_verdict(job(3, frozenset({0}), frozenset()), 1) is None


# --- admission ----------------------------------------------------------------------------------

NODE_JOB = "spec.template.spec.replicatedJobs[2].template.spec"


def admitted(**job_fields: Any) -> list[tuple[str, str]]:
    rt = trainer_test_runtime("labelled")
    job_spec = rt["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]
    job_spec.update(job_fields)
    job_spec["template"]["spec"]["restartPolicy"] = "Never"
    return [(e.path.removeprefix(NODE_JOB), e.message) for e in validate_runtime(rt)]


def test_per_index_fields_are_admitted_and_no_longer_warned() -> None:
    rules = {"rules": [FAIL_INDEX_ON_42]}
    assert admitted(backoffLimitPerIndex=1, maxFailedIndexes=1, completions=1, podFailurePolicy=rules) == []
    assert admitted(backoffLimitPerIndex=0, completionMode="Indexed") == []
    rt = trainer_test_runtime("labelled")
    rt["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"].update(
        backoffLimitPerIndex=1, maxFailedIndexes=0
    )
    assert runtime_warnings(rt) == []


@pytest.mark.parametrize(
    ("fields", "errors"),
    [
        (
            {"backoffLimitPerIndex": -1},
            [(".backoffLimitPerIndex", "-1: must be an integer greater than or equal to 0")],
        ),
        (
            {"backoffLimitPerIndex": "1"},
            [(".backoffLimitPerIndex", '"1": must be an integer greater than or equal to 0')],
        ),
        ({"maxFailedIndexes": 1}, [(".backoffLimitPerIndex", "when maxFailedIndexes is specified")]),
        (
            {"backoffLimitPerIndex": 1, "maxFailedIndexes": 2, "completions": 1},
            [(".maxFailedIndexes", "2: must be less than or equal to completions")],
        ),
        (
            {"backoffLimitPerIndex": 1, "maxFailedIndexes": 100_001},
            [(".maxFailedIndexes", "100001: must be less than or equal to 100000")],
        ),
        (
            {"backoffLimitPerIndex": 1, "maxFailedIndexes": 0, "completionMode": "NonIndexed"},
            [
                (".backoffLimitPerIndex", 'requires indexed completion mode, not "NonIndexed"'),
                (".maxFailedIndexes", 'requires indexed completion mode, not "NonIndexed"'),
            ],
        ),
        (
            {"podFailurePolicy": {"rules": [FAIL_INDEX_ON_42]}},
            [
                (
                    ".podFailurePolicy.rules[0].action",
                    "requires the backoffLimitPerIndex to be set: set the replicated job's "
                    "backoffLimitPerIndex, or use FailJob, Ignore or Count",
                )
            ],
        ),
    ],
)
def test_each_invalid_per_index_field_is_refused_naming_it(
    fields: Obj, errors: list[tuple[str, str]]
) -> None:
    assert admitted(**fields) == errors
