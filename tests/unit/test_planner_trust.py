"""plan() and what it trusts (docs/behaviour.md §5, §6; docs/operations.md "Threat model"):
pods fill slots by exact name and the job's controller reference, restart counts come from the
job's own record, huge jobs are planned a bounded pass at a time, refused creates become one
condition and one event, and a terminal status the operator did not write deletes nothing."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, pod, replica

from kubetrain.operator.draft import CreateFailure
from kubetrain.operator.plan import PlannerConfig


def pytorch(workers: int = 2, *, restart_policy: str = "OnFailure", **kw: Any) -> dict[str, Any]:
    return job(
        "PyTorchJob",
        {
            "Master": replica("PyTorchJob", 1, restart_policy),
            "Worker": replica("PyTorchJob", workers, restart_policy),
        },
        name="pt",
        **kw,
    )


def running(obj: dict[str, Any], config: PlannerConfig | None = None) -> Sim:
    sim = Sim(obj, config)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    assert sim.is_true("Running")
    return sim


def forged(sim: Sim, name: str, phase: str, *, rtype: str = "Master", index: int = 0, **kw: Any) -> None:
    """A pod a tenant created: the job's controller reference (its uid) and slot labels, any name."""
    kw.setdefault("exit_code", 0 if phase == "Succeeded" else None)
    fake = pod(sim.job, rtype, index, phase, **kw)
    fake["metadata"]["name"] = name
    fake["metadata"]["uid"] = f"forged-{name}"
    fake["metadata"]["labels"]["kubetrain.io/job-role"] = "master"
    sim.pods[name] = fake


# --- slots: exact name and controller reference --------------------------------------------------


def test_a_pod_with_the_masters_labels_but_another_name_neither_succeeds_nor_deletes_the_job() -> None:
    sim = running(pytorch())
    forged(sim, "evil", "Succeeded")
    p = sim.step(at(5))
    assert not sim.is_true("Succeeded") and sim.is_true("Running")
    assert p.delete_pods == [] and p.create_pods == []
    assert sim.job["status"]["replicaStatuses"]["Master"]["succeeded"] == 0


def test_a_failed_pod_with_slot_labels_but_another_name_fails_nothing() -> None:
    sim = running(pytorch(restart_policy="Never"))
    forged(sim, "evil", "Failed", rtype="Worker", index=1, exit_code=1)
    sim.step(at(5))
    assert not sim.is_true("Failed") and sim.is_true("Running")


def test_relabelling_a_real_pod_does_not_move_it_to_another_slot() -> None:
    sim = running(pytorch())
    labels = sim.pods["pt-worker-1"]["metadata"]["labels"]
    labels["kubetrain.io/replica-index"] = "0"  # anyone allowed to edit pods can do this
    p = sim.step(at(5))
    assert p.delete_pods == [] and p.create_pods == [] and sim.is_true("Running")


def test_a_pod_of_the_slots_name_controlled_by_another_uid_does_not_fill_the_slot() -> None:
    sim = Sim(pytorch())
    other = pod(sim.job, "Master", 0, "Succeeded", exit_code=0, owner_uid="someone-else")
    sim.pods[other["metadata"]["name"]] = other
    sim.step(at(0))
    assert not sim.is_true("Succeeded")


def test_a_controlled_pod_for_an_index_the_spec_no_longer_has_is_deleted() -> None:
    sim = running(pytorch())
    extra = pod(sim.job, "Worker", 7)
    sim.pods[extra["metadata"]["name"]] = extra
    assert sim.step(at(5)).delete_pods == ["pt-worker-7"]


# --- restarts: the job's record, never pod annotations ---------------------------------------------


def test_a_prior_restarts_annotation_on_a_pod_counts_for_nothing() -> None:
    sim = running(pytorch(run_policy={"backoffLimit": 3}))
    sim.pods["pt-worker-0"]["metadata"]["annotations"] = {"kubetrain.io/prior-restarts": "99"}
    sim.step(at(5))
    assert not sim.is_true("Failed")
    assert sim.restarts("Worker") == 0


def test_restarts_of_a_pod_that_left_stay_counted_and_later_restarts_add_to_them() -> None:
    sim = running(pytorch(run_policy={"backoffLimit": 10}))
    sim.set_phase("pt-worker-0", "Running", restart_count=2)
    sim.step(at(5))
    assert sim.restarts("Worker") == 2
    del sim.pods["pt-worker-0"]  # deleted by someone: recreated, not a restart
    p = sim.step(at(6))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["pt-worker-0"]
    assert sim.restarts("Worker") == 2
    assert sim.job["status"]["replicaStatuses"]["Worker"]["priorRestarts"] == 2
    sim.set_phase("pt-worker-1", "Running", restart_count=1)
    sim.step(at(7))
    assert sim.restarts("Worker") == 3


def test_a_status_written_before_prior_restarts_existed_takes_the_present_pods_as_counted() -> None:
    sim = running(pytorch())
    sim.set_phase("pt-worker-0", "Running", restart_count=2)
    sim.step(at(5))
    del sim.job["status"]["replicaStatuses"]["Worker"]["priorRestarts"]
    assert sim.step(at(6)).status is None or sim.restarts("Worker") == 2
    sim.set_phase("pt-worker-0", "Running", restart_count=3)
    sim.step(at(7))
    assert sim.restarts("Worker") == 3


# --- huge jobs: a bounded pass ----------------------------------------------------------------------


def test_a_huge_job_builds_only_the_pods_one_pass_creates() -> None:
    # Over the default maximum replicas per job (10,000): an operator configured for such jobs.
    sim = Sim(pytorch(20_000), PlannerConfig(max_replicas=50_000))
    p = sim.step(at(0))
    assert len(p.create_pods) == 500
    assert [x["metadata"]["name"] for x in p.create_pods[:3]] == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    assert sim.job["status"]["replicaStatuses"]["Worker"]["pending"] == 499
    p = sim.step(at(1))  # the next pass creates the next ones
    assert p.create_pods[0]["metadata"]["name"] == "pt-worker-499" and len(p.create_pods) == 500


def test_the_pass_size_is_configurable_and_the_job_completes_its_pods_over_passes() -> None:
    sim = Sim(pytorch(9), PlannerConfig(max_pod_creates=4))
    plans = [sim.step(at(i)) for i in range(4)]
    assert [len(p.create_pods) for p in plans] == [4, 4, 2, 0]
    # A full pass says the next one continues it (the applier may start that one pipelined).
    assert [p.creates_continue for p in plans] == [True, True, False, False]
    sim.all_phase("Running")
    sim.step(at(5))
    assert sim.is_true("Running")


# --- refused creates: one condition, one event --------------------------------------------------


QUOTA = 'could not create pod pt-worker-1: pods "pt-worker-1" is forbidden: exceeded quota: q, pods=2'


def test_a_refused_create_is_a_running_false_condition_and_one_warning_event() -> None:
    sim = Sim(pytorch(3000))
    sim.step(at(0))
    for name in list(sim.pods)[2:]:  # the quota let two pods in
        del sim.pods[name]
    sim.create_failure = CreateFailure("FailedCreatePod", QUOTA)
    p = sim.step(at(1))
    cond = sim.condition("Running")
    assert cond is not None and cond["status"] == "False" and cond["reason"] == "FailedCreatePod"
    assert "exceeded quota" in cond["message"]
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "FailedCreatePod")]
    for i in range(2, 6):  # retried with back-off: the same refusal writes nothing, says nothing new
        p = sim.step(at(i))
        assert p.status is None and p.events == [] and len(p.create_pods) == 500
        for name in p.create_pods:
            sim.pods.pop(name["metadata"]["name"], None)
    sim.create_failure = None  # a wave went through
    p = sim.step(at(9))
    cond = sim.condition("Running")
    assert cond is not None and cond["reason"] == "JobCreated" and "created again" in cond["message"]


def test_a_pod_name_conflict_says_which_pod_holds_the_name() -> None:
    sim = Sim(pytorch())
    message = "pod pt-worker-1 already exists and is not owned by PyTorchJob pt: delete or rename it"
    sim.create_failure = CreateFailure("PodNameConflict", message)
    p = sim.step(at(0))
    cond = sim.condition("Running")
    assert cond is not None and cond["reason"] == "PodNameConflict" and "pt-worker-1" in cond["message"]
    assert [e.reason for e in p.events] == ["PodNameConflict"]


# --- a terminal status the operator did not write ------------------------------------------------


def forge_succeeded(sim: Sim) -> None:
    status = copy.deepcopy(sim.job["status"])
    status["conditions"].append(
        {"type": "Succeeded", "status": "True", "reason": "JobSucceeded", "message": "forged"}
    )
    sim.job["status"] = status


def test_a_succeeded_condition_the_operator_did_not_write_deletes_no_running_pod() -> None:
    sim = running(pytorch(run_policy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 0}))
    forge_succeeded(sim)
    p = sim.step(at(5))
    assert p.delete_pods == [] and not p.delete_job and p.status is None
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "UnverifiedStatus")]
    assert "3 still running or pending" in p.events[0].message
    assert len(sim.pods) == 3


def test_a_terminal_condition_this_operator_wrote_is_acted_on() -> None:
    sim = running(pytorch(run_policy={"cleanPodPolicy": "All"}))
    forge_succeeded(sim)
    sim.terminal_recorded = True  # as if this process had written it
    p = sim.step(at(5))
    assert sorted(p.delete_pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]


def test_a_terminal_condition_the_pods_bear_out_is_acted_on_after_an_operator_restart() -> None:
    sim = running(pytorch(run_policy={"cleanPodPolicy": "Running"}))
    sim.set_phase("pt-master-0", "Succeeded", exit_code=0)
    p = sim.step(at(5))  # the operator decides Succeeded and cleans up the Workers
    assert sim.is_true("Succeeded") and sorted(p.delete_pods) == ["pt-worker-0", "pt-worker-1"]
    sim.pods["pt-worker-0"] = pod(sim.job, "Worker", 0)  # a delete that did not go through
    p = sim.step(at(6))  # a new process: no record, but the Master's success shows
    assert p.delete_pods == ["pt-worker-0"]


def test_an_unverified_terminal_status_is_acted_on_once_the_pods_end() -> None:
    sim = running(pytorch(run_policy={"cleanPodPolicy": "All"}))
    forge_succeeded(sim)
    assert sim.step(at(5)).delete_pods == []
    sim.all_phase("Failed", exit_code=1)
    p = sim.step(at(6))
    assert sorted(p.delete_pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]


def test_the_plan_that_writes_succeeded_says_it_finishes_the_job() -> None:
    sim = running(pytorch())
    assert not sim.step(at(4)).finishes
    sim.set_phase("pt-master-0", "Succeeded", exit_code=0)
    p = sim.step(at(5))
    assert sim.is_true("Succeeded") and p.status is not None and p.finishes
    assert p.outcome == "Succeeded"  # counted in kubetrain_jobs_succeeded_total when written
    assert not sim.step(at(6)).finishes  # nothing changed: no status to write
