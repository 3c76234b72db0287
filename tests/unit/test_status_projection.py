"""The two status projections (operator/statusprojection.py): the planner's decisions —
finished, suspended, resumed — written in each API's words, and the times its deadline and TTL
count from read back from each API's status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubetrain.jobs.shape import FAILED, SUCCEEDED
from kubetrain.operator.statusprojection import KUBEFLOW, TRAINER

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)
JOB: dict[str, Any] = {"metadata": {"name": "j", "creationTimestamp": "2026-11-25T11:00:00Z"}}


def types(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status.get("conditions", [])}


def test_kubeflow_finished_sets_completion_time_and_ends_running() -> None:
    status: dict[str, Any] = {
        "conditions": [{"type": "Running", "status": "True", "reason": "JobRunning", "message": "m"}]
    }
    assert KUBEFLOW.finished(status) is None
    KUBEFLOW.set_finished(status, SUCCEEDED, "JobSucceeded", "done", NOW)
    assert types(status) == {"Running": "False", "Succeeded": "True"}
    assert KUBEFLOW.finished(status) == SUCCEEDED
    assert KUBEFLOW.finished_at(status) == NOW


def test_trainer_finished_is_a_metav1_condition_and_the_ttl_counts_from_it() -> None:
    status: dict[str, Any] = {}
    TRAINER.set_finished(status, FAILED, "FailedJobs", "boom", NOW)
    assert types(status) == {"Failed": "True"}
    assert set(status["conditions"][0]) == {"type", "status", "reason", "message", "lastTransitionTime"}
    assert "completionTime" not in status
    assert TRAINER.finished(status) == FAILED
    assert TRAINER.finished_at(status) == NOW
    TRAINER.set_finished(status, FAILED, "FailedJobs", "boom", LATER)  # unchanged status: same time
    assert TRAINER.finished_at(status) == NOW


def test_suspend_and_resume_are_told_once_in_each_apis_words() -> None:
    kubeflow: dict[str, Any] = {"startTime": "2026-11-25T11:30:00Z"}
    assert KUBEFLOW.set_suspended(kubeflow, "TFJob j", NOW) == ("JobSuspended", "TFJob j is suspended.")
    assert KUBEFLOW.set_suspended(kubeflow, "TFJob j", LATER) is None
    assert KUBEFLOW.set_resumed(kubeflow, "TFJob j", LATER) == ("JobResumed", "TFJob j is resumed.")
    assert "startTime" not in kubeflow and KUBEFLOW.run_began(kubeflow, JOB, LATER) is None
    assert KUBEFLOW.set_resumed(kubeflow, "TFJob j", LATER) is None
    trainer: dict[str, Any] = {}
    assert TRAINER.run_began(trainer, JOB, NOW) == datetime(2026, 11, 25, 11, 0, 0, tzinfo=UTC)
    assert TRAINER.set_suspended(trainer, "TrainJob j", NOW) == ("Suspended", "TrainJob is suspended")
    assert TRAINER.set_suspended(trainer, "TrainJob j", LATER) is None
    assert TRAINER.set_resumed(trainer, "TrainJob j", LATER) == ("Resumed", "TrainJob is resumed")
    assert TRAINER.run_began(trainer, JOB, LATER + timedelta(hours=1)) == LATER  # the deadline restarts


def test_each_projection_writes_the_per_group_status_in_its_apis_words() -> None:
    from kubetrain.jobs.projection import GroupTally

    groups = [
        GroupTally("Master", 1, active=1, restarts=2, prior_restarts=1, selector="a=b"),
        GroupTally("Worker", 3, active=2, pending=1, succeeded=0, failed=0, selector="a=c"),
    ]
    status: dict[str, Any] = {}
    KUBEFLOW.write_groups(status, groups)
    assert status == {
        "replicaStatuses": {
            "Master": {
                "active": 1,
                "pending": 0,
                "succeeded": 0,
                "failed": 0,
                "restarts": 2,
                "priorRestarts": 1,
                "selector": "a=b",
            },
            "Worker": {
                "active": 2,
                "pending": 1,
                "succeeded": 0,
                "failed": 0,
                "restarts": 0,
                "priorRestarts": 0,
                "selector": "a=c",
            },
        },
        "replicas": 4,  # pods, for the printer columns
        "active": 3,
    }
    # Trainer's jobsStatus counts jobs, in its own key order, and nothing else.
    jobs = [GroupTally("node", 4, active=2, ready=1), GroupTally("init", 1, suspended=1)]
    status = {}
    TRAINER.write_groups(status, jobs)
    assert status == {
        "jobsStatus": [
            {"name": "node", "ready": 1, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0},
            {"name": "init", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 1},
        ]
    }
    assert list(status["jobsStatus"][0]) == ["name", "ready", "succeeded", "failed", "active", "suspended"]


def test_each_projection_words_success_and_the_deadline() -> None:
    assert KUBEFLOW.succeeded_as("TFJob j") == ("JobSucceeded", "TFJob j successfully completed.")
    assert KUBEFLOW.deadline_exceeded_as({"startTime": "t0"}, "TFJob j") == (
        "DeadlineExceeded",
        "TFJob j has exceeded its activeDeadlineSeconds (started t0).",
    )
    assert TRAINER.succeeded_as("TrainJob t") == ("AllJobsCompleted", "jobset completed successfully")
    assert TRAINER.deadline_exceeded_as({}, "TrainJob t") == (
        "DeadlineExceeded",
        "TrainJob exceeded its active deadline",
    )
    created: dict[str, Any] = {}
    TRAINER.set_created(created, "TrainJob t", NOW)
    TRAINER.observe_generation(created, 3)
    assert created == {}  # Trainer's status has neither Created nor observedGeneration
    KUBEFLOW.set_created(created, "TFJob j", NOW)
    KUBEFLOW.observe_generation(created, 3)
    assert types(created) == {"Created": "True"} and created["observedGeneration"] == 3
