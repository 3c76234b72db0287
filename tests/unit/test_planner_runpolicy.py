"""plan() and docs/behaviour.md §7: exact deadline and TTL wake-ups, cleanPodPolicy, suspend/resume."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica, ts


def pt(**run_policy: Any) -> dict[str, Any]:
    return job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 2)},
        name="rp",
        run_policy=run_policy,
    )


def test_deadline_wakes_up_exactly_and_fires_at_that_instant() -> None:
    sim = Sim(pt(activeDeadlineSeconds=600))
    first = sim.step(at(0.4))  # startTime is stored with second precision: 12:00:00
    deadline = at(600)
    assert first.requeue_at == deadline
    sim.all_phase("Running")
    p = sim.step(at(1))
    assert p.requeue_at is None or p.requeue_at == deadline
    before = sim.plan(deadline - timedelta(microseconds=1))
    assert before.requeue_at == deadline and before.status is None
    fired = sim.step(deadline)
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"
    assert sorted(fired.delete_pods) == ["rp-master-0", "rp-worker-0", "rp-worker-1"]
    assert [(e.type, e.reason) for e in fired.events] == [("Warning", "DeadlineExceeded")]


def test_deadline_deletes_active_pods_even_with_clean_pod_policy_none() -> None:
    sim = Sim(pt(activeDeadlineSeconds=10, cleanPodPolicy="None"))
    sim.step(at(0))
    sim.set_phase("rp-worker-1", "Running")
    fired = sim.step(at(10))
    assert sorted(fired.delete_pods) == ["rp-master-0", "rp-worker-0", "rp-worker-1"]


@pytest.mark.parametrize(
    ("policy", "deleted"),
    [
        ("All", ["rp-master-0", "rp-worker-0", "rp-worker-1"]),
        ("Running", ["rp-master-0", "rp-worker-0"]),
        ("None", []),
    ],
)
def test_backoff_limit_failure_follows_clean_pod_policy(policy: str, deleted: list[str]) -> None:
    """Kubeflow Trainer #3419: a job failed on its backoffLimit keeps what cleanPodPolicy keeps."""
    sim = Sim(pt(backoffLimit=1, cleanPodPolicy=policy))
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.set_phase("rp-worker-1", "Succeeded", exit_code=0)
    sim.set_phase("rp-master-0", "Running", restart_count=2)  # crash-looping (OnFailure)
    fired = sim.step(at(2))
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert sorted(fired.delete_pods) == deleted
    sim.terminal_recorded = True
    assert sim.step(at(3)).delete_pods == []
    assert sorted(sim.pods) == sorted({"rp-master-0", "rp-worker-0", "rp-worker-1"} - set(deleted))


def finish(sim: Sim, when: float) -> Any:
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.set_phase("rp-worker-1", "Failed", exit_code=1)
    sim.set_phase("rp-worker-0", "Succeeded", exit_code=0)
    sim.set_phase("rp-master-0", "Succeeded", exit_code=0)
    return sim.step(at(when))


def test_ttl_requeue_then_delete_job() -> None:
    sim = Sim(pt(ttlSecondsAfterFinished=300))
    done = finish(sim, 50)
    assert sim.is_true("Succeeded")
    assert done.requeue_at == at(350) and not done.delete_job
    assert sim.plan(at(349)).requeue_at == at(350)
    later = sim.plan(at(350))
    assert later.delete_job


def test_ttl_zero_deletes_at_once_and_never_while_suspended() -> None:
    sim = Sim(pt(ttlSecondsAfterFinished=0))
    done = finish(sim, 50)
    # The finishing reconcile records Succeeded and its event; the deletion is due at once.
    assert not done.delete_job and done.requeue_at == at(50) and done.status is not None
    assert sim.plan(at(50)).delete_job
    sim.job["spec"]["runPolicy"]["suspend"] = True
    sim.job["metadata"]["generation"] = 2
    assert not sim.plan(at(60)).delete_job


MULTIKUEUE = "kueue.x-k8s.io/multikueue"


def copied_status(outcome: str, finished: float, *, completion_time: bool = True) -> dict[str, Any]:
    """A finished status as MultiKueue copies it from the worker cluster's job."""
    stamp = ts(at(finished))
    status: dict[str, Any] = {
        "conditions": [
            {"type": "Created", "status": "True", "lastTransitionTime": ts(at(0))},
            {"type": "Running", "status": "False", "lastTransitionTime": stamp},
            {
                "type": outcome,
                "status": "True",
                "reason": f"PyTorchJob{outcome}",
                "lastTransitionTime": stamp,
            },
        ],
        "startTime": ts(at(1)),
    }
    if completion_time:
        status["completionTime"] = stamp
    return status


def test_another_controllers_finished_job_is_deleted_by_its_ttl() -> None:
    """JobSet issue 1310 (pull request 1315): the manager cluster's copy of a MultiKueue job is
    never reconciled, so its `ttlSecondsAfterFinished` never deleted it once MultiKueue had
    copied the worker's finished status; now the TTL is the one thing kubetrain does for it."""
    sim = Sim(pt(ttlSecondsAfterFinished=300, managedBy=MULTIKUEUE))
    running = sim.plan(at(0))
    assert running == type(running)()  # no pods, no status, no wake-up while it runs
    sim.job["status"] = copied_status("Succeeded", 40)
    done = sim.plan(at(50))
    assert done.requeue_at == at(340) and not done.delete_job
    assert done.status is None and done.create_pods == [] and done.events == []
    assert sim.plan(at(339)).requeue_at == at(340)
    assert sim.plan(at(340)).delete_job
    sim.job["status"] = copied_status("Failed", 40, completion_time=False)  # the condition's time
    assert sim.plan(at(339)).requeue_at == at(340) and sim.plan(at(340)).delete_job


def test_another_controllers_job_without_ttl_or_suspended_stays() -> None:
    sim = Sim(pt(managedBy=MULTIKUEUE))
    sim.job["status"] = copied_status("Succeeded", 40)
    assert sim.plan(at(10**6)) == type(sim.plan(at(0)))()
    suspended = Sim(pt(ttlSecondsAfterFinished=0, managedBy=MULTIKUEUE, suspend=True))
    suspended.job["status"] = copied_status("Failed", 40)
    assert not suspended.plan(at(10**6)).delete_job
    deleting = Sim(pt(ttlSecondsAfterFinished=0, managedBy=MULTIKUEUE))
    deleting.job["status"] = copied_status("Failed", 40)
    deleting.job["metadata"]["deletionTimestamp"] = ts(at(41))
    assert not deleting.plan(at(10**6)).delete_job


def test_suspending_a_running_job_with_a_ttl_stops_it() -> None:
    """Kubeflow Trainer issue 2239 (Kueue issue 2923): training-operator left a preempted TFJob
    with `ttlSecondsAfterFinished` Running with its pods; here suspend deletes the pods and sets
    Running False whatever the TTL, so Kueue sees the job stopped."""
    obj = job(
        "TFJob",
        {"PS": replica("TFJob", 1), "Worker": replica("TFJob", 2)},
        name="tf",
        run_policy={"ttlSecondsAfterFinished": 60},
    )
    sim = Sim(obj)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    assert sim.is_true("Running")
    sim.job["spec"]["runPolicy"]["suspend"] = True
    sim.job["metadata"]["generation"] = 2
    p = sim.step(at(2))
    assert sorted(p.delete_pods) == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    assert sim.is_true("Suspended") and not sim.is_true("Running") and not p.delete_job
    statuses = sim.job["status"]["replicaStatuses"]
    assert [statuses[t]["active"] for t in ("PS", "Worker")] == [0, 0]


@pytest.mark.parametrize(
    ("policy", "deleted", "service_deleted"),
    [
        ("All", ["rp-master-0", "rp-worker-0", "rp-worker-1"], True),
        ("Running", ["rp-worker-0"], True),
        ("None", [], False),
    ],
)
def test_clean_pod_policy(policy: str, deleted: list[str], service_deleted: bool) -> None:
    sim = Sim(pt(cleanPodPolicy=policy))
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.set_phase("rp-master-0", "Succeeded", exit_code=0)
    sim.set_phase("rp-worker-1", "Succeeded", exit_code=0)
    done = sim.step(at(2))
    assert sim.is_true("Succeeded")
    assert sorted(done.delete_pods) == deleted
    assert done.delete_service is service_deleted


def test_suspend_and_resume() -> None:
    sim = Sim(pt())
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.job["spec"]["runPolicy"]["suspend"] = True
    sim.job["metadata"]["generation"] = 2
    p = sim.step(at(100))
    assert sorted(p.delete_pods) == ["rp-master-0", "rp-worker-0", "rp-worker-1"]
    assert sim.is_true("Suspended") and not sim.is_true("Running")
    assert all(rs["active"] == 0 for rs in sim.job["status"]["replicaStatuses"].values())
    assert [(e.type, e.reason) for e in p.events] == [("Normal", "JobSuspended")]
    assert sim.step(at(101)).create_pods == []  # stays suspended, no pods

    sim.job["spec"]["runPolicy"]["suspend"] = False
    sim.job["metadata"]["generation"] = 3
    p = sim.step(at(200))
    suspended = sim.condition("Suspended")
    assert suspended is not None and (suspended["status"], suspended["reason"]) == ("False", "JobResumed")
    assert len(p.create_pods) == 3
    assert sim.job["status"]["startTime"] == "2024-05-01T12:03:20Z"  # reset on resume
    assert [(e.type, e.reason) for e in p.events] == [("Normal", "JobResumed")]


def test_suspend_deletes_the_pod_group() -> None:
    from kubetrain.operator.plan import PlannerConfig

    sim = Sim(pt(), PlannerConfig(gang_scheduler="scheduler-plugins"))
    sim.step(at(0))
    assert sim.pod_group is not None
    sim.job["spec"]["runPolicy"]["suspend"] = True
    sim.job["metadata"]["generation"] = 2
    assert sim.step(at(1)).delete_pod_group


@pytest.mark.parametrize(("policy", "workers_active"), [("All", 0), ("Running", 0), ("None", 1)])
def test_finished_job_status_does_not_count_pods_cleanPodPolicy_deletes(
    policy: str, workers_active: int
) -> None:
    sim = Sim(pt(cleanPodPolicy=policy))
    sim.step(at(0))
    sim.all_phase("Running")
    running = sim.step(at(1))
    assert running.status is not None and running.status["active"] == 3 and running.status["replicas"] == 3
    sim.set_phase("rp-master-0", "Succeeded", exit_code=0)
    sim.set_phase("rp-worker-1", "Succeeded", exit_code=0)
    sim.step(at(2))
    status = sim.job["status"]
    assert sim.is_true("Succeeded")
    assert status["replicaStatuses"]["Worker"]["active"] == workers_active
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 1
    assert status["active"] == workers_active
    assert status["replicas"] == 3
    # Nothing is left to write once the clean-up is observed.
    assert sim.step(at(3)).status is None
