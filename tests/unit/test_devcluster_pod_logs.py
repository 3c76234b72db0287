"""The simulated kubelet's pod logs (kubetrain.devcluster.kubelet.logs): which container and
instance, what the container prints, and the PodLogOptions applied to it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubetrain.devcluster.kubelet import logs

STARTED = "2026-01-01T10:00:00Z"
FINISHED = "2026-01-01T10:05:00Z"


def pod(*containers: dict[str, Any], statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "job-worker-0", "namespace": "team", "uid": "u-1", "labels": {"role": "w"}},
        "spec": {"nodeName": "node-0", "containers": list(containers)},
        "status": {"podIP": "10.0.0.7", "containerStatuses": statuses or []},
    }


WORKER = {
    "name": "pytorch",
    "image": "trainer:1",
    "command": ["python", "train.py"],
    "args": ["--master", "$(MASTER_ADDR):$(MASTER_PORT)", "--epochs", "3 or 4", "$$(literal)"],
    "env": [
        {"name": "MASTER_ADDR", "value": "job-master-0"},
        {"name": "MASTER_PORT", "value": "23456"},
        {"name": "RANK", "value": "1"},
        {"name": "URL", "value": "http://$(MASTER_ADDR):$(MASTER_PORT)/$(UNDEFINED)"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "ROLE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['role']"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
    ],
}


def running(name: str = "pytorch", restarts: int = 0, last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "containerID": f"containerd://{name}-{restarts}",
        "restartCount": restarts,
        "state": {"running": {"startedAt": STARTED}},
        "lastState": {"terminated": last} if last else {},
    }


def terminated(code: int, name: str = "pytorch", reason: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "containerID": f"containerd://{name}-0",
        "state": {
            "terminated": {
                "exitCode": code,
                "reason": reason or ("Completed" if code == 0 else "Error"),
                "startedAt": STARTED,
                "finishedAt": FINISHED,
                "containerID": f"containerd://{name}-0",
            }
        },
        "lastState": {},
    }


def text(p: dict[str, Any], options: logs.LogOptions | None = None) -> str:
    options = options or logs.LogOptions()
    name = logs.choose_container(p, options.container)
    ended = logs.instance(p, name, options.previous)
    now = datetime(2026, 1, 1, 10, 10, tzinfo=UTC)
    return logs.render(logs.log_lines(p, name, ended), options, now).decode()


def test_a_running_container_prints_its_command_and_the_env_it_sees() -> None:
    out = text(pod(WORKER, statuses=[running()])).splitlines()
    assert out[0] == 'devcluster: container "pytorch" (image trainer:1) started'
    assert out[1] == "$ python train.py --master job-master-0:23456 --epochs '3 or 4' '$(literal)'"
    assert out[2:] == [
        "MASTER_ADDR=job-master-0",
        "MASTER_PORT=23456",
        "RANK=1",
        "URL=http://job-master-0:23456/$(UNDEFINED)",
        "POD_NAME=job-worker-0",
        "ROLE=w",
        "POD_IP=10.0.0.7",
        "TOKEN=<secretKeyRef creds token>",
    ]


def test_a_terminated_container_ends_with_its_exit() -> None:
    out = text(pod(WORKER, statuses=[terminated(137, reason="OOMKilled")]))
    assert out.endswith("exited with code 137 (OOMKilled)\n")


def test_without_a_command_the_image_entrypoint_runs() -> None:
    p = pod({"name": "c", "image": "img:2", "args": ["--x"]}, statuses=[running("c")])
    assert text(p).splitlines()[1] == "$ '<entrypoint of img:2>' --x"


def test_cluster_env_json_is_printed_verbatim() -> None:
    tf_config = (
        '{"cluster": {"worker": ["job-worker-0.team.svc:2222"]}, "task": {"type": "worker", "index": 0}}'
    )
    p = pod(
        {"name": "tensorflow", "image": "tf", "env": [{"name": "TF_CONFIG", "value": tf_config}]},
        statuses=[running("tensorflow")],
    )
    assert f"TF_CONFIG={tf_config}" in text(p).splitlines()


def test_container_choice_follows_kube_apiserver() -> None:
    two = pod({"name": "a", "image": "i"}, {"name": "b", "image": "i"})
    two["spec"]["initContainers"] = [{"name": "init", "image": "i"}]
    with pytest.raises(logs.LogRefused) as info:
        logs.choose_container(two, "")
    assert (
        str(info.value)
        == "a container name must be specified for pod job-worker-0, choose one of: [init a b]"
    )
    with pytest.raises(logs.LogRefused) as info:
        logs.choose_container(two, "c")
    assert str(info.value) == "container c is not valid for pod job-worker-0"
    assert logs.choose_container(two, "init") == "init"
    assert logs.choose_container(pod(WORKER), "") == "pytorch"


def test_a_container_not_started_is_waiting() -> None:
    with pytest.raises(logs.LogRefused) as info:
        logs.instance(pod(WORKER), "pytorch", previous=False)
    assert (
        str(info.value) == 'container "pytorch" in pod "job-worker-0" is waiting to start: ContainerCreating'
    )
    waiting = {"name": "pytorch", "state": {"waiting": {"reason": "ImagePullBackOff"}}, "lastState": {}}
    with pytest.raises(logs.LogRefused, match="is waiting to start: trying and failing to pull image"):
        logs.instance(pod(WORKER, statuses=[waiting]), "pytorch", previous=False)


def test_previous_is_the_last_terminated_instance() -> None:
    last = {
        "exitCode": 1,
        "reason": "Error",
        "startedAt": STARTED,
        "finishedAt": FINISHED,
        "containerID": "containerd://pytorch-0",
    }
    p = pod(WORKER, statuses=[running(restarts=1, last=last)])
    assert text(p, logs.LogOptions(previous=True)).endswith("exited with code 1 (Error)\n")
    assert "exited" not in text(p)  # the current instance still runs
    with pytest.raises(logs.LogRefused) as info:
        logs.instance(pod(WORKER, statuses=[running()]), "pytorch", previous=True)
    assert str(info.value) == 'previous terminated container "pytorch" in pod "job-worker-0" not found'


def test_options_tail_timestamps_limit_and_since() -> None:
    p = pod(WORKER, statuses=[terminated(0)])
    assert (
        text(p, logs.LogOptions(tail_lines=2))
        == "TOKEN=<secretKeyRef creds token>\nexited with code 0 (Completed)\n"
    )
    assert text(p, logs.LogOptions(tail_lines=0)) == ""
    assert (
        text(p, logs.LogOptions(tail_lines=1, timestamps=True))
        == f"{FINISHED} exited with code 0 (Completed)\n"
    )
    assert text(p, logs.LogOptions(limit_bytes=11)) == "devcluster:"
    # now is 10:10; the start lines are from 10:00, the exit line from 10:05
    assert text(p, logs.LogOptions(since_seconds=400)) == "exited with code 0 (Completed)\n"
    since = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert text(p, logs.LogOptions(since_time=since)).count("\n") == 11


def test_option_parsing_and_validation() -> None:
    options, problems = logs.parse_options(
        {"container": "c", "follow": "true", "tailLines": "5", "timestamps": "1", "limitBytes": "10"}
    )
    assert options == logs.LogOptions(
        container="c", follow=True, tail_lines=5, timestamps=True, limit_bytes=10
    )
    assert problems == []
    _, problems = logs.parse_options({"tailLines": "-1", "limitBytes": "0", "sinceSeconds": "0"})
    assert problems == [
        ("tailLines", -1, "must be greater than or equal to 0"),
        ("limitBytes", 0, "must be greater than 0"),
        ("sinceSeconds", 0, "must be greater than 0"),
    ]
    _, problems = logs.parse_options({"sinceSeconds": "5", "sinceTime": "2026-01-01T00:00:00Z"})
    assert problems == [("", None, "at most one of `sinceTime` or `sinceSeconds` may be specified")]
    with pytest.raises(logs.LogRefused, match='tailLines: Invalid value: "ten": must be an integer'):
        logs.parse_options({"tailLines": "ten"})
