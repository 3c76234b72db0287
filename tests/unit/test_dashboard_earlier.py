"""Pod lives from before the dashboard started: rebuilt from the job's restart events, the pods'
kept container exits and the job's status, and drawn as bars like recorded ones."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubetrain.dashboard.views import earlier, timeline
from kubetrain.dashboard.views.podhistory import ContainerRun, PodLife, life_from_pod

T0 = 1_800_000_000.0
NAME = "mnist"


def at(seconds: float) -> str:
    return datetime.fromtimestamp(T0 + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event(seconds: float, reason: str, message: str) -> dict[str, Any]:
    return {"type": "Warning", "reason": reason, "message": message, "lastTimestamp": at(seconds)}


def recreated(
    seconds: float, pod: str, code: int, restart: int, reason: str = "JobRestarting"
) -> dict[str, Any]:
    return event(
        seconds,
        reason,
        f"pod {pod}: container pytorch exited with code {code}; recreating it"
        f" (restart {restart} of backoffLimit 5)",
    )


def job(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": NAME, "creationTimestamp": at(0)}, "status": {"startTime": at(10), **status}}


def current(index: int, created: float, attempt: int = 0) -> PodLife:
    return PodLife(
        uid=f"u{index}-{attempt}",
        name=f"{NAME}-worker-{index}",
        replica_type="worker",
        index=index,
        attempt=attempt,
        created=T0 + created,
        started=T0 + created + 2,
        phase="Running",
        containers=("pytorch",),
    )


def row(chart: timeline.Gantt, slot: str) -> timeline.Row:
    return next(r for r in chart.rows if r.label == slot)


def test_a_pod_recreated_twice_before_the_dashboard_started_gets_both_earlier_bars() -> None:
    events = [recreated(60, f"{NAME}-worker-1", 137, 1), recreated(95, f"{NAME}-worker-1", 1, 2)]
    lives, notes = earlier.earlier_lives([current(0, 12), current(1, 100)], events, job())
    assert notes == []
    rebuilt = [life for life in lives if life.estimated]
    assert [(life.created - T0, life.end and life.end - T0, life.exit_code) for life in rebuilt] == [
        (10.0, 60.0, 137),
        (60.0, 95.0, 1),
    ]
    chart = timeline.gantt(lives, timeline.causes_from_events(events), T0 + 130)
    bars = row(chart, "worker-1").bars
    assert [b.state for b in bars] == ["failed", "failed", "pending", "running"]
    assert "exit code 137" in bars[0].title and "start estimated" in bars[0].title
    assert "restart 1 of backoffLimit 5" in bars[0].title  # the operator's event: why
    assert "restart 2 of backoffLimit 5" in bars[1].title
    assert [b.state for b in row(chart, "worker-0").bars] == ["pending", "running"]  # never restarted


def test_a_kubeflow_jobs_restart_events_are_read_under_either_naming() -> None:
    """kubeflow.org writes training-operator's `PyTorchJobRestarting`; a job restarted before the
    operator wrote that keeps older `JobRestarting` events: both are pod restarts."""
    events = [
        recreated(60, f"{NAME}-worker-1", 137, 1),
        recreated(95, f"{NAME}-worker-1", 1, 2, reason="PyTorchJobRestarting"),
    ]
    assert [(e.pod, e.exit_code, e.whole_job) for e in earlier.endings(events)] == [
        (f"{NAME}-worker-1", 137, False),
        (f"{NAME}-worker-1", 1, False),
    ]


def test_a_whole_job_restart_ends_every_slot_and_fails_the_pod_it_names() -> None:
    restart = event(
        50,
        "RestartJob",
        f"PyTorchJob default/{NAME} is restarting all its pods as attempt 1: pod {NAME}-worker-0:"
        " container pytorch exited with code 3, matching RestartJob rule at index 0 (restart 1)",
    )
    lives, _ = earlier.earlier_lives([current(0, 55, 1), current(1, 56, 1)], [restart], job(jobRestarts=1))
    old = {life.slot: life for life in lives if life.estimated}
    assert old["worker-0"].phase == "Failed" and old["worker-0"].exit_code == 3
    assert old["worker-1"].phase == "Running" and old["worker-1"].deleted == T0 + 50
    assert old["worker-1"].finished is None and old["worker-0"].attempt == old["worker-1"].attempt == 0
    chart = timeline.gantt(lives, timeline.causes_from_events([restart]), T0 + 90)
    gone = row(chart, "worker-1").bars[0]
    assert gone.state == "running" and "deleted while running" in gone.title and "RestartJob" in gone.title


def test_a_restart_the_dashboard_saw_is_not_drawn_twice() -> None:
    seen = PodLife(
        uid="old",
        name=f"{NAME}-worker-1",
        replica_type="worker",
        index=1,
        attempt=0,
        created=T0 + 12,
        started=T0 + 14,
        finished=T0 + 59.5,
        phase="Failed",
        exit_code=137,
    )
    events = [recreated(60, f"{NAME}-worker-1", 137, 1)]
    lives, _ = earlier.earlier_lives([seen, current(1, 61)], events, job())
    assert not any(life.estimated for life in lives)


def test_expired_whole_job_restarts_are_noted_not_invented() -> None:
    lives, notes = earlier.earlier_lives([current(0, 500, 2)], [], job(jobRestarts=2))
    assert not any(life.estimated for life in lives)
    assert notes == [
        "2 earlier whole-job restarts (status.jobRestarts 2) not drawn: their events have expired"
    ]


def test_in_place_restarts_older_than_the_kept_exit_get_one_bar() -> None:
    pod = {
        "metadata": {"name": f"{NAME}-worker-0", "uid": "u", "creationTimestamp": at(0)},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "restartCount": 3,
                    "lastState": {"terminated": {"exitCode": 137, "startedAt": at(40), "finishedAt": at(50)}},
                    "state": {"running": {"startedAt": at(51)}},
                }
            ],
        },
    }
    life = earlier.in_place_gaps(life_from_pod(pod, None, T0 + 60))
    assert [(r.start and r.start - T0, r.end - T0, r.exit_code) for r in life.runs] == [
        (0.0, 40.0, None),
        (40.0, 50.0, 137),
    ]
    assert "2 earlier restarts (Kubernetes keeps only the last exit)" in life.runs[0].reason
    unchanged = PodLife(
        uid="x",
        name="x",
        replica_type="",
        index=None,
        attempt=0,
        created=T0,
        restart_count=1,
        runs=(ContainerRun("c", T0, T0 + 5, 1, "Error"),),
    )
    assert earlier.in_place_gaps(unchanged) is unchanged
