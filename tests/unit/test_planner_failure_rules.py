"""plan() and docs/behaviour.md §6: runPolicy.podFailurePolicy rules (FailJob, Ignore, Count,
RestartJob), whole-job restarts as new attempts, disruptions not counted against backoffLimit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import at, job, replica, running_sim

ATTEMPT = "kubetrain.io/attempt"


def rules_job(
    rules: list[dict[str, Any]], restart_policy: str = "ExitCode", **run_policy: Any
) -> dict[str, Any]:
    return job(
        "PyTorchJob",
        {
            "Master": replica("PyTorchJob", 1, restart_policy),
            "Worker": replica("PyTorchJob", 2, restart_policy),
        },
        name="fr",
        run_policy={"podFailurePolicy": {"rules": rules}, **run_policy},
    )


def exit_rule(action: str, *values: int, operator: str = "In", **extra: Any) -> dict[str, Any]:
    return {"action": action, "onExitCodes": {"operator": operator, "values": list(values)}, **extra}


def test_restart_job_recreates_every_pod_as_one_new_attempt() -> None:
    sim = running_sim(rules_job([exit_rule("RestartJob", 42)], backoffLimit=3))
    sim.set_phase("fr-worker-1", "Failed", exit_code=42)
    p = sim.step(at(5))
    # Every pod of the job goes, the failed one too; nothing is created while they are present.
    assert sorted(p.delete_pods) == ["fr-master-0", "fr-worker-0", "fr-worker-1"]
    assert p.create_pods == []
    status = sim.job["status"]
    assert status["jobRestarts"] == 1
    restarting = sim.condition("Restarting")
    assert restarting is not None and restarting["status"] == "True" and restarting["reason"] == "RestartJob"
    assert "fr-worker-1" in restarting["message"] and "exited with code 42" in restarting["message"]
    assert "RestartJob rule at index 0" in restarting["message"]
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "RestartJob")]
    assert sum(sim.restarts(t) for t in ("Master", "Worker")) == 1  # counted once
    assert p.restarts == 0  # the status records it: counted from the status, not the plan
    # Next reconcile: all gone → all recreated, labelled with the new attempt.
    p2 = sim.step(at(6))
    assert sorted(x["metadata"]["name"] for x in p2.create_pods) == [
        "fr-master-0",
        "fr-worker-0",
        "fr-worker-1",
    ]
    assert {x["metadata"]["labels"][ATTEMPT] for x in p2.create_pods} == {"1"}
    assert not sim.events[1:] or all(e.reason != "RestartJob" for e in p2.events)
    # The new attempt runs and succeeds; the restart stays counted once.
    sim.all_phase("Running")
    sim.step(at(7))
    assert sim.is_true("Running") and not sim.is_true("Restarting")
    sim.set_phase("fr-master-0", "Succeeded", exit_code=0)
    sim.step(at(8))
    assert sim.is_true("Succeeded")
    assert sum(sim.restarts(t) for t in ("Master", "Worker")) == 1
    assert sim.job["status"]["jobRestarts"] == 1


def test_pods_of_an_earlier_attempt_never_count_and_their_slots_wait() -> None:
    sim = running_sim(rules_job([exit_rule("RestartJob", 42)]))
    sim.set_phase("fr-worker-1", "Failed", exit_code=42)
    plan = sim.plan(at(5))
    sim.job["status"] = plan.status
    # The deletes were sent but the pods are still terminating; one old pod even reports Succeeded.
    for name in sim.pods:
        sim.pods[name]["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:05Z"
    sim.set_phase("fr-master-0", "Succeeded", exit_code=0)
    p = sim.step(at(6))
    assert p.create_pods == [] and p.delete_pods == []
    assert not sim.is_true("Succeeded")
    # An old-attempt pod that somehow is not terminating is deleted, and its slot stays empty.
    del sim.pods["fr-master-0"]["metadata"]["deletionTimestamp"]
    p = sim.step(at(7))
    assert p.delete_pods == ["fr-master-0"] and p.create_pods == []
    assert not sim.is_true("Succeeded")


def test_restart_job_counts_against_backoff_limit() -> None:
    sim = running_sim(rules_job([exit_rule("RestartJob", 42)], backoffLimit=1))
    sim.set_phase("fr-worker-0", "Failed", exit_code=42)
    sim.step(at(5))
    sim.step(at(6))
    sim.all_phase("Running")
    sim.step(at(7))
    sim.set_phase("fr-master-0", "Failed", exit_code=42)
    sim.step(at(8))
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert "fr-master-0" in failed["message"]


def test_fail_job_fails_at_once_naming_the_rule() -> None:
    # Exit code 137 would be retried under ExitCode; the rule makes it fatal.
    sim = running_sim(rules_job([exit_rule("Ignore", 1), exit_rule("FailJob", 137)], backoffLimit=5))
    sim.set_phase("fr-worker-0", "Failed", exit_code=137)
    p = sim.step(at(5))
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "PodFailurePolicy"
    assert "FailJob rule at index 1" in failed["message"] and "exited with code 137" in failed["message"]
    assert sorted(p.delete_pods) == ["fr-master-0", "fr-worker-1"]  # running pods are stopped


def test_ignore_recreates_without_counting() -> None:
    sim = running_sim(rules_job([exit_rule("Ignore", 3)], backoffLimit=0))
    for t in range(3):
        sim.set_phase("fr-worker-0", "Failed", exit_code=3)
        p = sim.step(at(5 + 3 * t))
        assert p.delete_pods == ["fr-worker-0"] and not sim.is_true("Failed")
        sim.step(at(6 + 3 * t))
        sim.set_phase("fr-worker-0", "Running")
        sim.step(at(7 + 3 * t))
    assert sim.restarts("Worker") == 0 and sim.is_true("Running")


def test_count_retries_what_exit_code_would_fail_and_counts_it() -> None:
    sim = running_sim(rules_job([exit_rule("Count", 1, 2)], backoffLimit=1))
    sim.set_phase("fr-worker-0", "Failed", exit_code=2)
    p = sim.step(at(5))
    assert p.delete_pods == ["fr-worker-0"] and sim.restarts("Worker") == 1
    sim.step(at(6))
    sim.set_phase("fr-worker-0", "Failed", exit_code=1)
    sim.step(at(7))
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"


def test_not_in_operator_and_rules_in_order() -> None:
    # NotIn [1]: any other non-zero code restarts the job; code 1 falls to the next rule.
    rules = [exit_rule("RestartJob", 1, operator="NotIn"), exit_rule("FailJob", 1)]
    sim = running_sim(rules_job(rules))
    sim.set_phase("fr-worker-0", "Failed", exit_code=1)
    sim.step(at(5))
    failed = sim.condition("Failed")
    assert failed is not None and "FailJob rule at index 1" in failed["message"]


def test_replica_types_limit_a_rule() -> None:
    rules = [exit_rule("RestartJob", 42, replicaTypes=["Master"])]
    sim = running_sim(rules_job(rules))
    sim.set_phase("fr-worker-0", "Failed", exit_code=42)  # a Worker: the rule does not apply
    sim.step(at(5))
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "PermanentExitCode"


def test_container_name_limits_an_exit_code_rule() -> None:
    rule = {"action": "Ignore", "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [42]}}
    two = [
        {"name": "pytorch", "image": "example.com/train:1"},
        {"name": "sidecar", "image": "example.com/s:1"},
    ]
    obj = job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1, "ExitCode", containers=two)},
        name="fr",
        run_policy={"podFailurePolicy": {"rules": [rule]}},
    )
    sim = running_sim(obj)
    sim.set_phase("fr-master-0", "Failed", exit_code=42)  # the pytorch container, not sidecar
    sim.step(at(5))
    assert sim.is_true("Failed")


def test_pod_condition_rule_and_status() -> None:
    rules = [{"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue", "status": "True"}]}]
    sim = running_sim(rules_job(rules, restart_policy="OnFailure"))
    sim.set_phase("fr-worker-0", "Failed")
    sim.pods["fr-worker-0"]["status"]["conditions"] = [{"type": "ConfigIssue", "status": "False"}]
    sim.step(at(5))
    assert not sim.is_true("Failed")  # status False does not match True
    sim.step(at(6))
    sim.set_phase("fr-worker-0", "Failed")
    sim.pods["fr-worker-0"]["status"]["conditions"] = [
        {"type": "ConfigIssue", "status": "True", "reason": "Bad"}
    ]
    sim.step(at(7))
    failed = sim.condition("Failed")
    assert failed is not None and "condition ConfigIssue=True (Bad)" in failed["message"]


def test_disruptions_do_not_count_by_default() -> None:
    obj = job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1, "ExitCode"), "Worker": replica("PyTorchJob", 1, "OnFailure")},
        name="fr",
        run_policy={"backoffLimit": 0},
    )
    sim = running_sim(obj)
    for t, disruption in enumerate(
        [
            {"reason": "Evicted"},
            {
                "conditions": [
                    {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
                ]
            },
        ]
    ):
        for name in ("fr-master-0", "fr-worker-0"):
            sim.set_phase(name, "Failed", exit_code=137)
            sim.pods[name]["status"].update(disruption)
        p = sim.step(at(5 + 3 * t))
        assert sorted(p.delete_pods) == ["fr-master-0", "fr-worker-0"] and not sim.is_true("Failed")
        sim.step(at(6 + 3 * t))
        sim.all_phase("Running")
        sim.step(at(7 + 3 * t))
    assert sim.restarts("Master") == 0 and sim.restarts("Worker") == 0 and sim.is_true("Running")


def test_a_disruption_rule_overrides_the_default() -> None:
    rules = [{"action": "RestartJob", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    sim = running_sim(rules_job(rules))
    sim.set_phase("fr-worker-0", "Failed")
    sim.pods["fr-worker-0"]["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    p = sim.step(at(5))
    assert len(p.delete_pods) == 3 and sim.job["status"]["jobRestarts"] == 1


def test_without_rules_nothing_changes() -> None:
    obj = job("PyTorchJob", {"Master": replica("PyTorchJob", 1, "ExitCode")}, name="fr")
    sim = running_sim(obj)
    sim.set_phase("fr-master-0", "Failed", exit_code=137)
    sim.step(at(5))
    assert sim.restarts("Master") == 1 and "jobRestarts" not in sim.job["status"]
    p = sim.step(at(6))
    assert ATTEMPT not in p.create_pods[0]["metadata"]["labels"]
