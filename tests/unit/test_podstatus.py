"""What the simulated kubelet writes: pure status builders and annotation parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubetrain.devcluster.kubelet import behaviour, crashstatus, nodeobjects, podstatus

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def pod(
    restart_policy: str = "Never", annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "job-worker-0",
            "namespace": "ns",
            "uid": "u1",
            "annotations": annotations or {},
        },
        "spec": {
            "nodeName": "node-0",
            "restartPolicy": restart_policy,
            "containers": [{"name": "pytorch", "image": "trainer:1"}, {"name": "sidecar", "image": "log:1"}],
            **spec,
        },
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]},
    }


def running(p: dict[str, Any], now: datetime = T0) -> dict[str, Any]:
    return {**p, "status": podstatus.running_status(p, host_ip="192.168.0.10", pod_ip="10.244.0.5", now=now)}


def conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


def test_running_status() -> None:
    status = running(pod())["status"]
    assert status["phase"] == "Running"
    assert status["podIP"] == "10.244.0.5"
    assert status["hostIP"] == "192.168.0.10"
    assert status["startTime"] == "2024-05-01T12:00:00Z"
    assert conditions(status)["Ready"] == "True"
    assert conditions(status)["ContainersReady"] == "True"
    assert conditions(status)["PodScheduled"] == "True"
    [main, side] = status["containerStatuses"]
    assert main["name"] == "pytorch"
    assert main["state"] == {"running": {"startedAt": "2024-05-01T12:00:00Z"}}
    assert (main["ready"], main["restartCount"]) == (True, 0)
    assert side["name"] == "sidecar"


def test_init_containers_reported_completed() -> None:
    status = running(pod(initContainers=[{"name": "init", "image": "i"}]))["status"]
    [init] = status["initContainerStatuses"]
    assert init["state"]["terminated"]["reason"] == "Completed"


@pytest.mark.parametrize(
    ("exit_code", "reason", "phase", "container_reason"),
    [
        (0, None, "Succeeded", "Completed"),
        (1, None, "Failed", "Error"),
        (137, "OOMKilled", "Failed", "OOMKilled"),
    ],
)
def test_terminated_status(exit_code: int, reason: str | None, phase: str, container_reason: str) -> None:
    p = running(pod())
    status = podstatus.terminated_status(
        p, exit_code=exit_code, reason=reason, now=T0 + timedelta(seconds=30)
    )
    assert status["phase"] == phase
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == exit_code
    assert terminated["reason"] == container_reason
    assert terminated["startedAt"] == "2024-05-01T12:00:00Z"
    assert terminated["finishedAt"] == "2024-05-01T12:00:30Z"
    assert conditions(status)["Ready"] == "False"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "PodCompleted"
    assert status["podIP"] == "10.244.0.5"  # kept


@pytest.mark.parametrize(
    ("exit_code", "codes", "phase"),
    [(0, {"sidecar": 1}, "Failed"), (1, {"sidecar": 0}, "Failed"), (0, {"sidecar": 0}, "Succeeded")],
)
def test_terminated_status_per_container(exit_code: int, codes: dict[str, int], phase: str) -> None:
    """A pod is Succeeded only when every container exited 0 (a failing sidecar fails it)."""
    status = podstatus.terminated_status(
        running(pod()), exit_code=exit_code, reason=None, now=T0, container_codes=codes
    )
    assert status["phase"] == phase
    got = {cs["name"]: cs["state"]["terminated"] for cs in status["containerStatuses"]}
    assert (got["pytorch"]["exitCode"], got["sidecar"]["exitCode"]) == (exit_code, codes["sidecar"])
    assert got["sidecar"]["reason"] == ("Completed" if codes["sidecar"] == 0 else "Error")


def test_evicted_status() -> None:
    status = podstatus.evicted_status(running(pod("OnFailure")), now=T0)
    assert status["phase"] == "Failed"
    assert status["reason"] == "Evicted"
    assert status["message"].startswith("The node was low on resource")
    target = next(c for c in status["conditions"] if c["type"] == "DisruptionTarget")
    assert (target["status"], target["reason"]) == ("True", "TerminationByKubelet")
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


def restarted(p: dict[str, Any], code: int, reason: str | None, now: datetime, *names: str) -> dict[str, Any]:
    """`names` (default: every container) exit and restart at once."""
    exits = dict.fromkeys(names or ("pytorch", "sidecar"), (code, reason))
    return crashstatus.crashed_status(p, exits=exits, waits={}, now=now)


def test_restarted_status_keeps_last_state_and_counts() -> None:
    p = running(pod("OnFailure"))
    later = T0 + timedelta(seconds=10)
    status = restarted(p, 137, "OOMKilled", later, "pytorch")
    p2 = {**p, "status": status}
    assert status["phase"] == "Running"
    main, side = status["containerStatuses"]
    assert main["restartCount"] == 1
    assert main["lastState"]["terminated"]["exitCode"] == 137
    assert main["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert main["state"] == {"running": {"startedAt": "2024-05-01T12:00:10Z"}}
    assert main["containerID"] != p["status"]["containerStatuses"][0]["containerID"]
    assert side["restartCount"] == 0
    again = restarted(p2, 1, None, later)
    assert [c["restartCount"] for c in again["containerStatuses"]] == [2, 1]
    assert podstatus.restart_count({**p, "status": again}) == 2


def test_restart_count_survives_a_later_termination() -> None:
    p = running(pod("OnFailure"))
    p = {**p, "status": restarted(p, 1, None, T0)}
    status = podstatus.terminated_status(p, exit_code=0, reason=None, now=T0)
    assert status["containerStatuses"][0]["restartCount"] == 1
    assert status["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1


@pytest.mark.parametrize(
    ("policy", "exit_code", "restarts", "limit", "expected"),
    [
        ("Never", 0, 0, None, "Succeeded"),
        ("Never", 1, 0, None, "Failed"),
        ("OnFailure", 0, 0, None, "Succeeded"),
        ("OnFailure", 137, 0, None, "restart"),
        ("OnFailure", 137, 5, None, "restart"),
        ("OnFailure", 137, 2, 2, "Failed"),
        ("Always", 0, 0, None, "restart"),
        ("Always", 0, 1, 1, "Succeeded"),
    ],
)
def test_exit_outcome_follows_restart_policy(
    policy: str, exit_code: int, restarts: int, limit: int | None, expected: str
) -> None:
    assert behaviour.exit_outcome(pod(policy), exit_code, restarts, limit) == expected


def test_behaviour_from_annotations() -> None:
    b = behaviour.Behaviour.from_pod(
        pod(
            annotations={
                behaviour.RUN_SECONDS: "30",
                behaviour.EXIT_CODE: "137",
                behaviour.REASON: "OOMKilled",
                behaviour.RESTARTS_BEFORE_EXIT: "2",
                behaviour.START_SECONDS: "1.5",
            }
        )
    )
    assert b == behaviour.Behaviour(
        run_seconds=30.0, exit_code=137, reason="OOMKilled", restarts_before_exit=2, start_seconds=1.5
    )
    assert behaviour.Behaviour.from_pod(pod()).run_seconds is None  # held until told
    assert behaviour.Behaviour.from_pod(pod(), default_run_seconds=5).run_seconds == 5
    assert behaviour.RUN_SECONDS == "sim.kubetrain.io/run-seconds"


@pytest.mark.parametrize(
    ("key", "value"),
    [(behaviour.RUN_SECONDS, "soon"), (behaviour.EXIT_CODE, "300"), (behaviour.RUN_SECONDS, "-1")],
)
def test_bad_annotation_names_the_annotation(key: str, value: str) -> None:
    with pytest.raises(ValueError, match=key):
        behaviour.Behaviour.from_pod(pod(annotations={key: value}))


def test_binding_and_node() -> None:
    b = nodeobjects.binding(pod(), "node-3")
    assert b["kind"] == "Binding"
    assert b["metadata"] == {"name": "job-worker-0", "namespace": "ns", "uid": "u1"}
    assert b["target"] == {"apiVersion": "v1", "kind": "Node", "name": "node-3"}
    node = nodeobjects.node_object("node-3", "192.168.0.13", T0)
    ready = node["status"]["conditions"][0]
    assert (ready["type"], ready["status"]) == ("Ready", "True")
    assert {"type": "InternalIP", "address": "192.168.0.13"} in node["status"]["addresses"]


def test_condition_transition_times_are_kept_when_status_unchanged() -> None:
    p = running(pod())
    again = podstatus.running_status(p, host_ip="h", pod_ip="i", now=T0 + timedelta(minutes=5))
    ready = next(c for c in again["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == "2024-05-01T12:00:00Z"
