"""A replicated job's Job `successPolicy`, applied by kubetrain in the Job controller's place
(jobs/jobsuccess.py, operator/jobsuccess.py): rules matched as `matchSuccessPolicy` matches
them, a matched Job succeeded (its running pods deleted and never made again, counted as
succeeded by the JobSet success rules, `dependsOn` and `jobsStatus`), forgotten on a restart,
and the runtime's admission by the Job API's rules (`validateSuccessPolicy`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from trainjobs import RUNTIME, failed_condition, record_of

from kubetrain.jobs.jobsuccess import SuccessRule, matched_rule, parse_indexes
from kubetrain.jobs.trainjob.runtimerules import runtime_warnings, validate_runtime

from .test_trainjob_podfailurepolicy import failed_pod
from .test_trainjob_shape import warmup_runtime
from .test_trainplan import pod, trainjob
from .test_trainplan_jobset_policies import plan

Obj = dict[str, Any]
LEADER = {"rules": [{"succeededIndexes": "0"}]}
NODES = ["tj-node-0-0", "tj-node-0-1", "tj-node-0-2"]


def node_runtime(policy: Obj | None = None, **job: Any) -> Obj:
    rt: Obj = copy.deepcopy(RUNTIME)
    job_spec = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec.update(successPolicy=LEADER if policy is None else policy, **job)
    return rt


def warmup_with(policy: Obj, depends: str | None = None) -> Obj:
    """Two warmup Jobs of 2 pods each with `policy`, then the node job (after warmup `depends`)."""
    rt: Obj = warmup_runtime(replicas=2)
    rjobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[0]["template"]["spec"]["successPolicy"] = policy
    if depends is not None:
        rjobs[1]["dependsOn"] = [{"name": "warmup", "status": depends}]
    return rt


def condition(p: Any, kind: str) -> Obj | None:
    return next((c for c in (p.status or {}).get("conditions") or [] if c["type"] == kind), None)


def jobs_status(p: Any, name: str) -> Obj:
    return next(s for s in p.status["jobsStatus"] if s["name"] == name)


def created(p: Any) -> list[str]:
    return [x["metadata"]["name"] for x in p.create_pods]


def normal(p: Any) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in p.events if e.type == "Normal"]


# --- matching (matchSuccessPolicy) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "succeeded", "expected"),
    [
        ([SuccessRule("0")], {0}, 0),
        ([SuccessRule("0")], {1, 2}, None),
        ([SuccessRule("0-2")], {0, 2}, None),  # indexes only: every named one
        ([SuccessRule("0-2", 2)], {0, 2}, 0),  # with a count: that many of the named ones
        ([SuccessRule("0-2", 2)], {0, 3}, None),
        ([SuccessRule(None, 2)], {1, 3}, 0),  # a count only: that many of any
        ([SuccessRule(None, 2)], {3}, None),
        ([SuccessRule(None, 0)], set(), None),  # no succeeded index: nothing matches
        ([SuccessRule(None, 0)], {1}, 0),
        ([SuccessRule("1"), SuccessRule("0")], {0}, 1),  # the first rule that matches
        ([SuccessRule("7"), SuccessRule(None, 1)], {0}, 1),  # an index past completions is skipped
        ([SuccessRule("x,0")], {0}, 0),  # at run time an interval that is no integer is skipped
        ([SuccessRule("0-7")], {0, 1, 2, 3}, 0),  # an interval past completions is cut there
        ([SuccessRule("5,0")], {0}, None),  # one starting past them ends the list: no index left
    ],
)
def test_rules_match_as_the_job_controller_matches_them(
    rules: list[SuccessRule], succeeded: set[int], expected: int | None
) -> None:
    assert matched_rule(tuple(rules), 4, succeeded) == expected


def test_succeeded_indexes_are_ordered_intervals_below_completions() -> None:
    assert parse_indexes("0-3,5", 8) == (frozenset({0, 1, 2, 3, 5}), None)
    assert parse_indexes("", 8) == (frozenset(), None)
    assert parse_indexes("3,1", 8)[1] == "non-increasing order, previous: 3, current: 1"
    assert parse_indexes("2-2", 8)[1] == "non-increasing order, previous: 2, current: 2"
    assert parse_indexes("8", 8)[1] == 'too large index: "8"'
    assert parse_indexes("a", 8)[1] == 'cannot convert string to integer for index: "a"'
    assert parse_indexes("-1", 8)[1] == 'cannot convert string to integer for index: ""'
    assert "at most two parts" in str(parse_indexes("1-2-3", 8)[1])


# --- the planner ------------------------------------------------------------------------------


def test_the_leader_succeeding_completes_the_job_and_the_trainjob() -> None:
    """Index 0 Succeeded, 1 and 2 still running: the Job has succeeded by its policy (a Normal
    event), its running pods are deleted, and the TrainJob (one replicated job) is Complete."""
    pods = [pod(NODES[0], phase="Succeeded", ready=False), pod(NODES[1]), pod(NODES[2])]
    p = plan(trainjob(nodes=3), node_runtime(), pods)
    assert condition(p, "Complete") is not None and failed_condition(p) is None
    assert sorted(p.delete_pods) == NODES[1:]
    assert ("SuccessPolicy", "Job node of replicated job node succeeded: Matched rules at index 0") in normal(
        p
    )
    assert record_of(p)["succeededJobs"] == ["node"]
    assert jobs_status(p, "node")["succeeded"] == 1


def test_without_a_match_nothing_is_done() -> None:
    pods = [pod(NODES[0]), pod(NODES[1], phase="Succeeded", ready=False), pod(NODES[2])]
    p = plan(trainjob(nodes=3), node_runtime(), pods)
    assert condition(p, "Complete") is None and p.delete_pods == []
    assert "succeededJobs" not in record_of(p)


def test_a_job_done_by_policy_is_not_made_again_and_counts_as_succeeded() -> None:
    """Warmup Job 0's index 0 succeeds: its index 1 is deleted; later, gone, it is not made
    again, the Job counts as succeeded in jobsStatus, and the TrainJob waits for the rest."""
    warm = ["tj-warmup-0-0", "tj-warmup-0-1", "tj-warmup-1-0", "tj-warmup-1-1"]
    rt = warmup_with(LEADER)
    running = [pod(warm[0], phase="Succeeded", ready=False), *map(pod, warm[1:]), *map(pod, NODES)]
    p = plan(trainjob(nodes=3), rt, running)
    assert p.delete_pods == ["tj-warmup-0-1"] and condition(p, "Complete") is None
    after = record_of(p)
    assert after["succeededJobs"] == ["warmup/0"]
    gone = [pod(warm[0], phase="Succeeded", ready=False), *map(pod, warm[2:]), *map(pod, NODES)]
    again = plan(trainjob(nodes=3), rt, gone, after)
    assert created(again) == [] and again.delete_pods == []
    assert jobs_status(again, "warmup")["succeeded"] == 1 and jobs_status(again, "warmup")["active"] == 1
    assert again.update_children == []  # the record as it was: the Job still done


def test_depends_on_complete_counts_a_job_done_by_policy() -> None:
    """The node job waits for warmup Complete: both warmup Jobs done by their policy (index 1
    deleted and gone) start it."""
    rt = warmup_with(LEADER, depends="Complete")
    done = [pod("tj-warmup-0-0", phase="Succeeded", ready=False), pod("tj-warmup-1-0", phase="Succeeded")]
    state = {"restarts": 0, "failures": {}, "succeededJobs": ["warmup/0", "warmup/1"]}
    assert created(plan(trainjob(nodes=2), rt, done, state)) == ["tj-node-0-0", "tj-node-0-1"]
    plain = warmup_with(LEADER, depends="Complete")
    del plain["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["successPolicy"]
    # without a success policy the Jobs are not done: their missing pods are made, node waits
    assert created(plan(trainjob(nodes=2), plain, done)) == ["tj-warmup-0-1", "tj-warmup-1-1"]


def test_a_gang_restart_forgets_the_jobs_done_by_policy() -> None:
    """Backoff limit 0 on node and a JobSet rule that restarts: the new attempt's record has no
    succeededJobs — every Job runs again."""
    rt = warmup_with(LEADER)
    rt["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 2}
    node_spec = rt["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]
    node_spec["backoffLimit"] = 0
    state = {"restarts": 0, "failures": {}, "succeededJobs": ["warmup/0"]}
    pods = [
        pod("tj-warmup-0-0", phase="Succeeded", ready=False),
        pod("tj-warmup-1-0"),
        pod("tj-warmup-1-1"),
        failed_pod("tj-node-0-0", containers={"node": 1}),
        pod("tj-node-0-1"),
    ]
    after = record_of(plan(trainjob(nodes=2), rt, pods, state))
    assert after["restarts"] == 1 and "succeededJobs" not in after


def test_a_job_that_failed_in_the_same_pass_stays_failed() -> None:
    """The failure checks come first (`syncJob`): index 1 failing past the backoff limit while
    index 0 succeeded fails the Job, whatever its success policy."""
    rt = node_runtime(backoffLimit=0)
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "restartPolicy"
    ] = "Never"
    pods = [pod(NODES[0], phase="Succeeded", ready=False), failed_pod(NODES[1], containers={"node": 1})]
    p = plan(trainjob(nodes=2), rt, pods)
    assert failed_condition(p) is not None and condition(p, "Complete") is None


# --- admission (validateSuccessPolicy) --------------------------------------------------------

PATH = "spec.template.spec.replicatedJobs[0].template.spec"
INDEXES, COUNT = "successPolicy.rules[0].succeededIndexes", "successPolicy.rules[0].succeededCount"


@pytest.mark.parametrize(
    ("policy", "job", "field", "message"),
    [
        ({"rules": []}, {}, "successPolicy.rules", "at least one rules must be specified"),
        ({"rules": [{}] * 21}, {}, "successPolicy.rules", "must have at most 20 items, got 21"),
        ({"rules": [{}]}, {}, "successPolicy.rules[0]", "at least one of succeededCount or succeededIndexes"),
        (LEADER, {"completionMode": "NonIndexed"}, "completionMode", "requires completionMode: Indexed"),
        ({"rules": [{"succeededIndexes": "0-4"}]}, {"completions": 4}, INDEXES,
         'error parsing succeededIndexes: too large index: "4"'),
        ({"rules": [{"succeededIndexes": "2,1"}]}, {}, INDEXES,
         "non-increasing order, previous: 2, current: 1"),
        ({"rules": [{"succeededCount": 5}]}, {"completions": 4}, COUNT,
         "must be less than or equal to 4 (the number of specified completions)"),
        ({"rules": [{"succeededIndexes": "0,2", "succeededCount": 3}]}, {}, COUNT,
         "must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)"),
        ({"rules": [{"succeededCount": -1}]}, {}, COUNT,
         "must be an integer greater than or equal to 0"),
    ],
)  # fmt: skip
def test_a_policy_the_job_api_refuses_is_refused_naming_the_field(
    policy: Obj, job: Obj, field: str, message: str
) -> None:
    errors = validate_runtime(node_runtime(policy, **job))
    assert any(e.path == f"{PATH}.{field}" and message in e.message for e in errors), errors


def test_a_valid_policy_is_admitted_without_a_warning() -> None:
    rt = node_runtime({"rules": [{"succeededIndexes": "0-2,3", "succeededCount": 2}, {"succeededCount": 1}]})
    assert validate_runtime(rt) == []
    assert not [w for w in runtime_warnings(rt) if "successPolicy" in w]
