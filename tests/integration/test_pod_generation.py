"""A pod's generation and observedGeneration through its life on devcluster, as on a Kubernetes
1.35+ cluster (KEP-5067, GA): generation 1 on create, +1 per spec change and on graceful
deletion, never for a status write, a metadata change or the binding; a status write that leaves
observedGeneration out keeps the stored one; the simulated kubelet's status observes the
generation it acted on — and writes again after a spec update, as a kubelet's next sync does —
and `kubectl get pod -o yaml` shows it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pods
import pytest
import yaml
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
KUBELET_CONDITIONS = {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}


@pytest.fixture
async def sim(devcluster: DevCluster, clock: FakeClock) -> AsyncIterator[PodSimulator]:
    async with PodSimulator(devcluster.kubeconfig_path, nodes=1, clock=clock) as s:
        yield s


def manifest(name: str) -> dict[str, Any]:
    return pods.pod_manifest(name, namespace=NS, container="pytorch", image="trainer:1")


async def create(raw: RawApi, body: dict[str, Any]) -> dict[str, Any]:
    code, made = await raw.request("POST", PODS, body=body)
    assert code == 201, made
    return dict(made)


async def get(raw: RawApi, name: str) -> dict[str, Any]:
    code, body = await raw.request("GET", f"{PODS}/{name}")
    assert code == 200, body
    return dict(body)


async def put(raw: RawApi, pod: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    name = pod["metadata"]["name"]
    code, body = await raw.request("PUT", f"{PODS}/{name}{subresource}", body=pod)
    assert code == 200, body
    return dict(body)


async def bind(raw: RawApi, name: str, node: str) -> None:
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": node}}
    code, body = await raw.request("POST", f"{PODS}/{name}/binding", body=binding)
    assert code == 201, body


def observing(generation: int) -> Callable[[dict[str, Any] | None], bool]:
    return lambda pod: pod is not None and pod["status"].get("observedGeneration") == generation


def generations(pod: dict[str, Any]) -> dict[str, Any]:
    return {c["type"]: c.get("observedGeneration") for c in pod["status"].get("conditions") or []}


async def test_generation_moves_with_the_spec_and_graceful_deletion_only(raw: RawApi) -> None:
    pod = await create(raw, manifest("gen"))
    assert pod["metadata"]["generation"] == 1
    pod["metadata"]["labels"] = {"team": "a"}
    pod = await put(raw, pod)
    assert pod["metadata"]["generation"] == 1  # metadata is not the spec
    pod["status"]["message"] = "seen"
    pod = await put(raw, pod, "/status")
    assert pod["metadata"]["generation"] == 1  # a status write never moves it
    pod["spec"]["activeDeadlineSeconds"] = 3600
    pod = await put(raw, pod)
    assert pod["metadata"]["generation"] == 2
    await bind(raw, "gen", "node-1")
    pod = await get(raw, "gen")
    assert pod["spec"]["nodeName"] == "node-1"
    assert pod["metadata"]["generation"] == 2  # the binding writes around the pod strategy
    code, pod = await raw.request("DELETE", f"{PODS}/gen", query={"gracePeriodSeconds": "30"})
    assert code == 200, pod
    assert pod["metadata"]["generation"] == 3  # the first graceful deletion
    code, pod = await raw.request("DELETE", f"{PODS}/gen", query={"gracePeriodSeconds": "10"})
    assert code == 200, pod
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 10
    assert pod["metadata"]["generation"] == 3  # a shorter grace period is not a new deletion


async def test_a_status_write_that_leaves_observed_generation_out_keeps_it(raw: RawApi) -> None:
    pod = await create(raw, manifest("keep"))
    pod["status"]["observedGeneration"] = 1
    pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "observedGeneration": 1},
        {"type": "example.com/Gate", "status": "False", "observedGeneration": 1},
    ]
    pod = await put(raw, pod, "/status")
    pod["spec"]["activeDeadlineSeconds"] = 3600
    pod = await put(raw, pod)
    assert pod["metadata"]["generation"] == 2
    # a client that knows nothing of observedGeneration rewrites the conditions without it
    pod["status"].pop("observedGeneration")
    pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"},
        {"type": "example.com/Gate", "status": "True"},
    ]
    pod = await put(raw, pod, "/status")
    assert pod["status"]["observedGeneration"] == 1
    assert generations(pod) == {"PodScheduled": 1, "example.com/Gate": 1}
    # the binding replaces PodScheduled whole: True, and no observedGeneration, reason or message
    await bind(raw, "keep", "n")
    (scheduled,) = [
        c for c in (await get(raw, "keep"))["status"]["conditions"] if c["type"] == "PodScheduled"
    ]
    assert scheduled["status"] == "True"
    assert not {"observedGeneration", "reason", "message"} & scheduled.keys()


async def test_the_kubelets_status_observes_each_spec_update(
    devcluster: DevCluster, sim: PodSimulator, raw: RawApi
) -> None:
    body = manifest("run")
    body["metadata"]["finalizers"] = ["example.com/keep"]  # seen after the kubelet's DELETE
    await create(raw, body)
    pod = await sim.wait_for_phase(NS, "run", "Running")
    assert pod is not None
    pod = await get(raw, "run")
    assert pod["metadata"]["generation"] == 1
    assert pod["status"]["observedGeneration"] == 1
    assert {k: v for k, v in generations(pod).items() if k in KUBELET_CONDITIONS} == dict.fromkeys(
        KUBELET_CONDITIONS, 1
    )
    ready_since = {c["type"]: c["lastTransitionTime"] for c in pod["status"]["conditions"]}
    pod["spec"]["activeDeadlineSeconds"] = 3600
    pod = await put(raw, pod)
    assert pod["metadata"]["generation"] == 2
    seen = await sim.wait_for(
        NS, "run", lambda p: p is not None and p["status"].get("observedGeneration") == 2
    )
    assert seen is not None
    pod = await get(raw, "run")
    assert pod["status"]["phase"] == "Running"
    assert generations(pod) == dict.fromkeys(KUBELET_CONDITIONS, 2)
    # nothing changed status: the transitions stand
    assert {c["type"]: c["lastTransitionTime"] for c in pod["status"]["conditions"]} == ready_since
    if KUBECTL is not None:
        code, out, err = await run_kubectl(
            devcluster.kubeconfig_path, "get", "pod", "run", "-n", NS, "-o", "yaml"
        )
        assert code == 0, err
        printed = yaml.safe_load(out)
        assert printed["metadata"]["generation"] == 2
        assert printed["status"]["observedGeneration"] == 2
        assert {c["type"]: c["observedGeneration"] for c in printed["status"]["conditions"]} == dict.fromkeys(
            KUBELET_CONDITIONS, 2
        )
    # the graceful deletion's generation is the one the kubelet's last status observes
    code, body = await raw.request("DELETE", f"{PODS}/run", query={"gracePeriodSeconds": "30"})
    assert code == 200, body
    assert body["metadata"]["generation"] == 3
    last = await sim.wait_for(NS, "run", lambda p: p is not None and p["status"].get("phase") == "Failed")
    assert last is not None and last["status"]["observedGeneration"] == 3
    assert generations(last) == dict.fromkeys(KUBELET_CONDITIONS, 3)
