"""A TrainJob's deadline and `jobsStatus` as the planner decides them, held to Kubeflow Trainer
2.3's controller integration tests ("Integration tests for the TrainJob Timeouts", "Should
synchronize JobsStatus from JobSet ReplicatedJobsStatus"): each test names the Trainer cases
it answers. The clock is the plan's `now`, never slept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from .test_trainplan import NOW, plan, pod, snapshot, trainjob

Obj = dict[str, Any]


def conditions(p: Any) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in p.status.get("conditions") or []]


def test_the_deadline_is_not_exceeded_before_its_time() -> None:
    """Trainer: "Should not fail TrainJob if ActiveDeadlineSeconds is not exceeded"."""
    job = trainjob(1, activeDeadlineSeconds=3600)  # created 12:00 - 60 s
    p = plan(job, [pod("tj-node-0-0")], [snapshot(job)], now=NOW + timedelta(minutes=58))
    assert ("Failed", "True", "DeadlineExceeded") not in conditions(p)
    assert p.requeue_at == datetime(2026, 11, 25, 12, 59, 0, tzinfo=UTC)
    assert p.delete_pods == []


def test_the_deadline_fails_the_trainjob_and_deletes_its_pods() -> None:
    """Trainer: "Should fail TrainJob with DeadlineExceeded when ActiveDeadlineSeconds expires"
    (and its JobSet is deleted: here the pods)."""
    job = trainjob(2, activeDeadlineSeconds=1)
    p = plan(job, [pod("tj-node-0-0"), pod("tj-node-0-1")], [snapshot(job)])
    assert ("Failed", "True", "DeadlineExceeded") in conditions(p)
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]


def test_a_suspended_trainjob_runs_no_deadline() -> None:
    """Trainer: "Should not start deadline timer if TrainJob is suspended"."""
    job = trainjob(1, activeDeadlineSeconds=1, suspend=True)
    p = plan(job, [], [snapshot(job)], now=NOW + timedelta(hours=1))
    assert conditions(p) == [("Suspended", "True", "Suspended")]
    assert p.requeue_at is None and p.create_pods == []


def test_resuming_starts_the_deadline_again() -> None:
    """Trainer: "Should reset deadline timer upon resume": counted from the Resumed transition,
    not from creation."""
    job = trainjob(1, activeDeadlineSeconds=2)
    resumed = NOW + timedelta(hours=1)
    job["status"] = {
        "conditions": [
            {
                "type": "Suspended",
                "status": "False",
                "reason": "Resumed",
                "message": "TrainJob is resumed",
                "lastTransitionTime": resumed.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        ]
    }
    p = plan(job, [pod("tj-node-0-0")], [snapshot(job)], now=resumed + timedelta(seconds=1))
    assert ("Failed", "True", "DeadlineExceeded") not in conditions(p)
    assert p.requeue_at == resumed + timedelta(seconds=2)
    p = plan(job, [pod("tj-node-0-0")], [snapshot(job)], now=resumed + timedelta(seconds=2))
    assert conditions(p) == [("Suspended", "False", "Resumed"), ("Failed", "True", "DeadlineExceeded")]
    assert p.delete_pods == ["tj-node-0-0"]


def test_jobs_status_follows_the_pods() -> None:
    """Trainer: "Should synchronize JobsStatus from JobSet ReplicatedJobsStatus": a running node
    is ready and active; a suspended TrainJob's job counts as suspended."""
    job = trainjob(1)
    p = plan(job, [pod("tj-node-0-0")], [snapshot(job)])
    assert p.status["jobsStatus"] == [
        {"name": "node", "ready": 1, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}
    ]
    p = plan(job, [pod("tj-node-0-0", ready=False)], [snapshot(job)])
    assert p.status["jobsStatus"][0]["ready"] == 0 and p.status["jobsStatus"][0]["active"] == 1
    suspended = trainjob(1, suspend=True)
    p = plan(suspended, [], [snapshot(suspended)])
    assert p.status["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 1}
    ]
