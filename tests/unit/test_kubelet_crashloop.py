"""The simulated kubelet's crash-loop back-off (Kubernetes 1.36's doBackOff over client-go's
flowcontrol.Backoff) and the status of a container that waits it out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubetrain.devcluster.kubelet import crashloop, crashstatus, podstatus

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_delay_doubles_from_10s_to_at_most_300s() -> None:
    assert [crashloop.delay_seconds(n) for n in range(9)] == [0, 10, 20, 40, 80, 160, 300, 300, 300]
    assert crashloop.delay_seconds(10_000) == 300


@pytest.mark.parametrize(
    ("seconds", "printed"),
    [(0, "0s"), (10, "10s"), (40, "40s"), (80, "1m20s"), (160, "2m40s"), (300, "5m0s"), (3600, "1h0m0s")],
)
def test_delays_print_as_go_durations(seconds: int, printed: str) -> None:
    assert crashloop.go_duration(seconds) == printed


def test_a_crash_loop_restarts_at_once_then_after_10_20_40_seconds() -> None:
    """Each exit comes 1 s after the container started; the kubelet's view at each exit."""
    entry, now, waited = None, T0, []
    for _ in range(5):
        exited = now + timedelta(seconds=1)
        if crashloop.in_back_off(entry, exited, exited):
            assert entry is not None
            assert crashloop.in_back_off(entry, exited, exited + timedelta(seconds=entry.delay - 0.001))
            assert not crashloop.in_back_off(entry, exited, exited + timedelta(seconds=entry.delay))
            now = exited + timedelta(seconds=entry.delay)
        else:
            now = exited
        waited.append((now - exited).total_seconds())
        entry = crashloop.next_back_off(entry, exited, now)
    assert waited == [0, 10, 20, 40, 80]
    assert entry is not None and entry.delay == 160


def test_a_run_of_over_10_minutes_since_the_last_restart_resets_the_back_off() -> None:
    entry = crashloop.BackOff(steps=4, last_update=T0)  # 80 s for the next exit
    assert crashloop.in_back_off(entry, at(600), at(600))  # ran exactly 600 s: not reset
    assert crashloop.next_back_off(entry, at(600), at(680)) == crashloop.BackOff(5, at(680))
    assert not crashloop.in_back_off(entry, at(601), at(601))  # over 600 s: restarted at once
    assert crashloop.next_back_off(entry, at(601), at(601)) == crashloop.BackOff(1, at(601))
    # the time since the exit does not count: the exit is in back-off until its delay is over,
    # and then the entry moves on from the restart
    assert not crashloop.in_back_off(entry, at(30), at(3600))
    assert crashloop.next_back_off(entry, at(30), at(3600)) == crashloop.BackOff(5, at(3600))


def pod() -> dict[str, Any]:
    p: dict[str, Any] = {
        "metadata": {"name": "job-worker-0", "namespace": "ns", "uid": "u1"},
        "spec": {
            "nodeName": "node-0",
            "restartPolicy": "OnFailure",
            "containers": [{"name": "pytorch", "image": "trainer:1"}, {"name": "sidecar", "image": "log:1"}],
        },
        "status": {"phase": "Pending"},
    }
    return {**p, "status": podstatus.running_status(p, host_ip="192.168.0.10", pod_ip="10.244.0.5", now=T0)}


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def test_a_container_waits_out_its_back_off_then_runs_again() -> None:
    p = pod()
    exits: dict[str, crashstatus.Exit] = {"pytorch": (1, None), "sidecar": (0, None)}
    status = crashstatus.crashed_status(p, exits=exits, waits={"pytorch": 80}, now=at(30))
    main, side = status["containerStatuses"]
    assert status["phase"] == "Running"
    assert main["state"] == {
        "waiting": {
            "reason": "CrashLoopBackOff",
            "message": "back-off 1m20s restarting failed container=pytorch pod=job-worker-0_ns(u1)",
        }
    }
    assert (main["ready"], main["started"], main["restartCount"]) == (False, False, 0)
    assert main["containerID"] == p["status"]["containerStatuses"][0]["containerID"]  # the exited one
    assert main["lastState"]["terminated"] == {
        **main["lastState"]["terminated"],
        "exitCode": 1,
        "reason": "Error",
        "startedAt": "2024-05-01T12:00:00Z",
        "finishedAt": "2024-05-01T12:00:30Z",
    }
    # a container with no back-off yet restarts at once
    assert (side["restartCount"], "running" in side["state"], side["ready"]) == (1, True, True)
    assert side["lastState"]["terminated"]["reason"] == "Completed"
    for kind in ("Ready", "ContainersReady"):
        c = conditions(status)[kind]
        assert (c["status"], c["reason"]) == ("False", "ContainersNotReady")
        assert c["message"] == "containers with unready status: [pytorch]"
    p = {**p, "status": status}
    assert crashstatus.backing_off(p) == [("pytorch", "2024-05-01T12:00:30Z")]
    assert not podstatus.first_running(p)

    again = crashstatus.retried_status(p, ["pytorch"], at(110))
    main = again["containerStatuses"][0]
    assert main["state"] == {"running": {"startedAt": "2024-05-01T12:01:50Z"}}
    assert (main["ready"], main["started"], main["restartCount"]) == (True, True, 1)
    assert main["lastState"]["terminated"]["exitCode"] == 1
    assert main["containerID"] != p["status"]["containerStatuses"][0]["containerID"]
    ready = conditions(again)["Ready"]
    assert ready["status"] == "True" and "message" not in ready and "reason" not in ready
    assert crashstatus.backing_off({**p, "status": again}) == []
