"""A replicated job's Job `podFailurePolicy`, applied by kubetrain in the Job controller's place:
the Job controller's matching (pod_failure_policy.go: rules in order, first match wins, exit
codes of non-zero terminated containers before init containers, `containerName`, In/NotIn,
pod condition type and status), its effect in the TrainJob planner (Ignore: replaced, not
counted; Count: counted; FailJob: the Job fails at once with reason PodFailurePolicy, which
JobSet's failurePolicy rules see through `onJobFailureReasons` and message patterns), and the
runtime's admission by the Job API's rules."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from trainjobs import RUNTIME, failed_condition, record_of, trainer_test_runtime, warnings

from kubetrain.jobs.failuremodel import JOB_RULE_ACTIONS
from kubetrain.jobs.failureorder import FailedJob, FailureOrder
from kubetrain.jobs.trainjob.failurepolicy import decide
from kubetrain.jobs.trainjob.podfailurepolicy import FAIL_INDEX_REFUSED
from kubetrain.jobs.trainjob.runtimerules import validate_runtime
from kubetrain.operator.groupfailure import fail_job_message
from kubetrain.operator.restarts import first_match

from .test_trainplan import pod, trainjob
from .test_trainplan_jobset_policies import plan

Obj = dict[str, Any]
DISRUPTION = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
FAIL_ON_42 = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}


def failed_pod(
    name: str = "tj-node-0-0",
    containers: dict[str, int] | None = None,
    init: dict[str, int] | None = None,
    conditions: list[Obj] | None = None,
) -> Obj:
    """A Failed pod whose containers (and init containers) terminated with these exit codes."""
    p = pod(name, phase="Failed", ready=False)

    def statuses(codes: dict[str, int]) -> list[Obj]:
        return [{"name": n, "state": {"terminated": {"exitCode": c}}} for n, c in codes.items()]

    p["status"]["containerStatuses"] = statuses(containers or {})
    p["status"]["initContainerStatuses"] = statuses(init or {})
    p["status"]["conditions"] = [*p["status"]["conditions"], *(conditions or [])]
    return p


def evicted(name: str = "tj-node-0-0") -> Obj:
    disruption = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    return failed_pod(name, {"node": 137}, conditions=[disruption])


def match(rules: list[Obj], p: Obj) -> tuple[int, str, str] | None:
    m = first_match(rules, p, actions=JOB_RULE_ACTIONS)
    return None if m is None else (m.index, m.action, m.what)


# --- matching -------------------------------------------------------------------------------


def test_rules_are_matched_in_order_and_the_first_match_decides() -> None:
    count_any = {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1]}}
    p = failed_pod(containers={"node": 42})
    assert match([FAIL_ON_42, count_any], p) == (0, "FailJob", "container node exited with code 42")
    assert match([count_any, FAIL_ON_42], p) == (0, "Count", "container node exited with code 42")
    # a rule that does not match is passed over
    assert match([DISRUPTION, FAIL_ON_42], p) == (1, "FailJob", "container node exited with code 42")
    assert match([DISRUPTION], p) is None


def test_container_name_restricts_the_exit_codes_looked_at() -> None:
    p = failed_pod(containers={"node": 42, "sidecar": 3})
    sidecar = {
        "action": "FailJob",
        "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [42]},
    }
    assert match([sidecar], p) is None
    sidecar["onExitCodes"]["values"] = [3]
    assert match([sidecar], p) == (0, "FailJob", "container sidecar exited with code 3")


def test_not_in_matches_any_other_non_zero_code_and_zero_never_matches() -> None:
    not_known = {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}}
    assert match([not_known], failed_pod(containers={"node": 42}))[:2] == (0, "FailJob")  # type: ignore[index]
    assert match([not_known], failed_pod(containers={"node": 2})) is None
    # a container that exited 0 is no failure: not looked at, even by NotIn
    assert match([not_known], failed_pod(containers={"node": 0, "sidecar": 1})) is None
    # a container still running has no exit code to match
    running = failed_pod(containers={})
    running["status"]["containerStatuses"] = [{"name": "node", "state": {"running": {}}}]
    assert match([not_known], running) is None


def test_containers_are_looked_at_before_init_containers() -> None:
    """`matchOnExitCodes`: containerStatuses first, then initContainerStatuses."""
    p = failed_pod(containers={"node": 42}, init={"fetch": 42})
    assert match([FAIL_ON_42], p) == (0, "FailJob", "container node exited with code 42")
    only_init = failed_pod(init={"fetch": 42})
    assert match([FAIL_ON_42], only_init) == (0, "FailJob", "container fetch exited with code 42")


def test_disruption_target_matches_by_type_and_status_true_by_default() -> None:
    assert match([DISRUPTION], evicted()) == (
        0,
        "Ignore",
        "condition DisruptionTarget=True (EvictionByEvictionAPI)",
    )
    on_false = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]}
    assert match([on_false], evicted()) is None
    # an exit-code rule before it does not match the evicted pod's 137
    assert match([FAIL_ON_42, DISRUPTION], evicted())[:2] == (1, "Ignore")  # type: ignore[index]


def test_actions_kubetrain_does_not_apply_to_a_job_are_skipped() -> None:
    """As the Job controller skips an action it does not know (FailIndex without
    backoffLimitPerIndex, kubetrain's own RestartJob): the next rule decides."""
    p = failed_pod(containers={"node": 42})
    fail_index = {**FAIL_ON_42, "action": "FailIndex"}
    restart = {**FAIL_ON_42, "action": "RestartJob"}
    count = {**FAIL_ON_42, "action": "Count"}
    assert match([fail_index, restart, count], p) == (2, "Count", "container node exited with code 42")


def test_the_job_failure_message_is_the_job_controllers() -> None:
    exit_match = first_match(
        [DISRUPTION, FAIL_ON_42], failed_pod(containers={"node": 42}), actions=JOB_RULE_ACTIONS
    )
    assert exit_match is not None
    assert fail_job_message(exit_match, failed_pod(), "ns") == (
        "Container node for pod ns/tj-node-0-0 failed with exit code 42 matching FailJob rule at index 1"
    )
    fail_on_disruption = {**DISRUPTION, "action": "FailJob"}
    cond_match = first_match([fail_on_disruption], evicted(), actions=JOB_RULE_ACTIONS)
    assert cond_match is not None
    assert fail_job_message(cond_match, evicted(), "ns") == (
        "Pod ns/tj-node-0-0 has condition DisruptionTarget matching FailJob rule at index 0"
    )


# --- the planner ------------------------------------------------------------------------------


def runtime(rules: list[Obj], backoff_limit: int = 0, failure_policy: Obj | None = None) -> Obj:
    rt = copy.deepcopy(RUNTIME)
    jobset = rt["spec"]["template"]["spec"]
    job_spec = jobset["replicatedJobs"][0]["template"]["spec"]
    job_spec.update(backoffLimit=backoff_limit, podFailurePolicy={"rules": rules})
    job_spec["template"]["spec"]["restartPolicy"] = "Never"
    if failure_policy is not None:
        jobset["failurePolicy"] = failure_policy
    return rt


def test_an_ignored_failure_is_replaced_without_using_up_the_backoff_limit() -> None:
    """backoffLimit 0: one counted failure would fail the TrainJob; an evicted pod matched by an
    Ignore rule is deleted (and made again) and counts for nothing, however often."""
    rt = runtime([DISRUPTION, FAIL_ON_42])
    p = plan(trainjob(nodes=2), rt, [evicted(), pod("tj-node-0-1")], {"restarts": 0, "failures": {}})
    assert failed_condition(p) is None
    assert p.delete_pods == ["tj-node-0-0"]
    assert p.update_children == []  # the run's record is unchanged: nothing counted
    # without the rule the same eviction counts, and backoffLimit 0 fails the TrainJob
    counted = plan(trainjob(nodes=2), runtime([FAIL_ON_42]), [evicted(), pod("tj-node-0-1")], {"restarts": 0})
    assert failed_condition(counted)["reason"] == "FailedJobs"  # type: ignore[index]


def test_count_counts_as_without_a_rule() -> None:
    count = {"action": "Count", "onExitCodes": {"operator": "In", "values": [3]}}
    p = plan(
        trainjob(nodes=1),
        runtime([count], backoff_limit=2),
        [failed_pod(containers={"node": 3})],
        {"restarts": 0, "failures": {"node": 1}},
    )
    assert failed_condition(p) is None
    assert p.delete_pods == ["tj-node-0-0"] and record_of(p)["failures"] == {"node": 2}


def test_fail_job_fails_the_trainjob_at_once_and_keeps_the_pod() -> None:
    """backoffLimit 6 left untouched: exit 42 fails the Job (reason PodFailurePolicy, a Warning
    event with the Job controller's message) and, without a JobSet failurePolicy, the TrainJob
    (JobSet's FailedJobs). The failed pod stays for its logs; the running one is deleted."""
    pods = [failed_pod(containers={"node": 42}), pod("tj-node-0-1")]
    p = plan(trainjob(nodes=2), runtime([DISRUPTION, FAIL_ON_42], backoff_limit=6), pods, {"restarts": 0})
    cond = failed_condition(p)
    assert cond is not None and cond["reason"] == "FailedJobs"
    assert cond["message"] == "jobset failed due to one or more job failures (first failed job: tj-node-0)"
    assert (
        "PodFailurePolicy",
        "Container node for pod ns/tj-node-0-0 failed with exit code 42 matching FailJob rule at index 1",
    ) in warnings(p)
    assert p.delete_pods == ["tj-node-0-1"]


def test_jobset_rules_branch_on_the_jobs_failure_reason() -> None:
    """JobSet's `onJobFailureReasons`: a FailJobSet rule for PodFailurePolicy fails the TrainJob
    at once while a Job past its backoff limit (BackoffLimitExceeded) falls through to the
    default RestartJobSet; a rule for PodFailurePolicy with RestartJobSet restarts the gang."""
    fail_on_policy = {
        "maxRestarts": 3,
        "rules": [{"action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}],
    }
    rt = runtime([FAIL_ON_42], backoff_limit=0, failure_policy=fail_on_policy)
    p = plan(trainjob(nodes=1), rt, [failed_pod(containers={"node": 42})], {"restarts": 0})
    assert failed_condition(p)["reason"] == "FailJobSetFailurePolicyAction"  # type: ignore[index]
    # exit 1: no pod rule matches, the Job is past backoffLimit 0, the rule does not apply
    p = plan(trainjob(nodes=1), rt, [failed_pod(containers={"node": 1})], {"restarts": 0})
    assert failed_condition(p) is None
    assert (
        "RestartJobSetFailurePolicyAction",
        "applying RestartJobSet failure policy action (first failed job: tj-node-0)",
    ) in warnings(p)
    assert record_of(p)["restarts"] == 1
    restart_on_policy = {
        "maxRestarts": 3,
        "rules": [
            {"action": "RestartJobSet", "onJobFailureReasons": ["PodFailurePolicy"]},
            {"action": "FailJobSet"},
        ],
    }
    rt = runtime([FAIL_ON_42], backoff_limit=6, failure_policy=restart_on_policy)
    p = plan(trainjob(nodes=1), rt, [failed_pod(containers={"node": 42})], {"restarts": 0})
    assert failed_condition(p) is None and record_of(p)["restarts"] == 1
    assert p.delete_pods == ["tj-node-0-0"]


def test_jobset_message_patterns_see_the_job_controllers_message() -> None:
    policy = {
        "maxRestarts": 3,
        "rules": [
            {"action": "FailJobSet", "onJobFailureMessagePatterns": ["exit code 42 matching"]},
            {"action": "RestartJobSet"},
        ],
    }
    on_any = {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}}
    rt = runtime([on_any], failure_policy=policy)
    p = plan(trainjob(nodes=1), rt, [failed_pod(containers={"node": 42})], {"restarts": 0})
    assert failed_condition(p)["reason"] == "FailJobSetFailurePolicyAction"  # type: ignore[index]
    p = plan(trainjob(nodes=1), rt, [failed_pod(containers={"node": 7})], {"restarts": 0})
    assert failed_condition(p) is None and record_of(p)["restarts"] == 1


# --- admission ----------------------------------------------------------------------------------

NODE_JOB = "spec.template.spec.replicatedJobs[2].template.spec"


def admitted(policy: Any, restart_policy: str | None = "Never", **job_fields: Any) -> list[tuple[str, str]]:
    rt = trainer_test_runtime("labelled")
    job_spec = rt["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]
    job_spec.update(podFailurePolicy=policy, **job_fields)
    if restart_policy is not None:
        job_spec["template"]["spec"]["restartPolicy"] = restart_policy
    return [(e.path.removeprefix(NODE_JOB), e.message) for e in validate_runtime(rt)]


def test_a_valid_policy_is_admitted() -> None:
    rules = [
        DISRUPTION,
        FAIL_ON_42,
        {"action": "Count", "onExitCodes": {"containerName": "node", "operator": "NotIn", "values": [0, 1]}},
        {"action": "Ignore", "onPodConditions": [{"type": "example.com/Preempted", "status": "Unknown"}]},
    ]
    assert admitted({"rules": rules}) == []
    assert admitted({"rules": []}) == []


def test_the_pod_template_must_restart_never() -> None:
    assert admitted({"rules": [FAIL_ON_42]}, restart_policy="OnFailure") == [
        (
            ".template.spec.restartPolicy",
            'OnFailure: only "Never" is supported when podFailurePolicy is specified',
        )
    ]
    [(path, message)] = admitted({"rules": []}, restart_policy=None)
    assert path == ".template.spec.restartPolicy" and "unset: JobSet's default" in message
    assert admitted({"rules": []}, podReplacementPolicy="TerminatingOrFailed") == [
        (".podReplacementPolicy", '"TerminatingOrFailed" is not supported: must be one of "Failed"')
    ]


@pytest.mark.parametrize(
    ("rule", "errors"),
    [
        (
            {**FAIL_ON_42, "action": "FailIndex"},
            [
                (
                    ".action",
                    FAIL_INDEX_REFUSED,
                )
            ],
        ),
        (
            {**FAIL_ON_42, "action": "RestartJob"},
            [
                (
                    ".action",
                    '"RestartJob" is not supported: must be one of "FailJob", "FailIndex", "Ignore", "Count"',
                )
            ],
        ),
        (
            {"onExitCodes": FAIL_ON_42["onExitCodes"]},
            [(".action", 'one of "FailJob", "FailIndex", "Ignore", "Count"')],
        ),
        (
            {**FAIL_ON_42, **DISRUPTION, "action": "Count"},
            [("", "specifying both onExitCodes and onPodConditions is not supported")],
        ),
        ({"action": "Count"}, [("", "specifying one of onExitCodes and onPodConditions is required")]),
        (
            {"action": "Count", "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [1]}},
            [
                (
                    ".onExitCodes.containerName",
                    '"sidecar" must be one of the container or initContainer names in the pod template: '
                    '"node"',
                )
            ],
        ),
        (
            {"action": "Count", "onExitCodes": {"operator": "Between", "values": [1]}},
            [(".onExitCodes.operator", '"Between" is not supported: must be one of "In", "NotIn"')],
        ),
        (
            {"action": "Count", "onExitCodes": {"operator": "In", "values": [0, 3, 2, 2]}},
            [
                (".onExitCodes.values[0]", "must not be 0 for the In operator"),
                (".onExitCodes.values[2]", "must be ordered (2 comes after 3)"),
                (".onExitCodes.values[3]", "2 is listed twice"),
            ],
        ),
        (
            {"action": "Count", "onExitCodes": {"operator": "In", "values": ["42"]}},
            [(".onExitCodes.values[0]", '"42" is not an exit code (int32)')],
        ),
        (
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "not a type"}, {"type": "Ready", "status": "Yes"}],
            },
            [
                (
                    ".onPodConditions[0].type",
                    '"not a type" is not a valid pod condition type (a qualified name)',
                ),
                (
                    ".onPodConditions[1].status",
                    '"Yes" is not supported: must be one of "True", "False", "Unknown"',
                ),
            ],
        ),
        (
            {"action": "Ignore", "onPodConditions": []},
            [(".onPodConditions", "at least one pod condition pattern, e.g. {type: DisruptionTarget}")],
        ),
    ],
)
def test_each_invalid_rule_is_refused_naming_its_field(rule: Obj, errors: list[tuple[str, str]]) -> None:
    base = ".podFailurePolicy.rules[1]"
    assert admitted({"rules": [DISRUPTION, rule]}) == [(base + path, message) for path, message in errors]


def test_too_many_rules_and_a_malformed_policy_are_refused() -> None:
    assert admitted({"rules": [DISRUPTION] * 21}) == [
        (".podFailurePolicy.rules", "must have at most 20 items, got 21")
    ]
    assert admitted({"rules": "all"}) == [
        (".podFailurePolicy.rules", "must be a list of rules (it may be empty)")
    ]
    assert admitted(["rules"]) == [(".podFailurePolicy", "must be an object with a list of rules")]


def test_a_rule_on_a_reason_picks_the_first_job_that_failed_with_it() -> None:
    """JobSet's findFirstFailedPolicyRuleAndJob: per rule, the Job failed first among those the
    rule applies to — by reason, within one replicated job as across them."""
    t = datetime(2026, 11, 25, 12, tzinfo=UTC)
    by_limit = FailedJob("worker", 0, t)
    by_rule = FailedJob("worker", 1, t + timedelta(seconds=5), "PodFailurePolicy", "Container node … 42 …")
    policy = {
        "maxRestarts": 5,
        "rules": [
            {"action": "RestartJob", "onJobFailureReasons": ["PodFailurePolicy"]},
            {"action": "FailJobSet"},
        ],
    }
    order = FailureOrder([by_limit, by_rule])
    verdict = decide("tj", policy, order, 0)
    assert (verdict.reason, verdict.job) == ("RestartJobFailurePolicyAction", ("worker", 1))
    order.take("worker", 1)
    assert order.first() == by_limit and order.groups == ["worker"]
    assert decide("tj", policy, order, 1).reason == "FailJobSetFailurePolicyAction"
    order.take("worker", 0)
    assert not order
