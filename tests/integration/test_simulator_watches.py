"""The pod simulator's kubelet, scheduler and node controllers share one pod watch and one Node
watch (devcluster/sharedwatch.py), counted with devcluster's request accounting: one LIST and one
WATCH of each, whoever reads them — the pod garbage collector's caches included, and a simulator
confined to one namespace still runs (and its pod GC sees) only what it should."""

from __future__ import annotations

import pods

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock

from .controller_support import eventually

AGENT = "kubetrain-pod-simulator"


async def watches_made(cluster: DevCluster, sim: PodSimulator) -> dict[tuple[str, str, str], int]:
    """The simulator's LISTs and WATCHes of pods and Nodes by (verb, resource, namespace), once
    the node health monitor's first pass is done (it reads the shared Node watch's cache: no
    LIST of its own)."""
    monitor = sim.heartbeats.monitor
    if monitor is not None:
        await eventually(lambda: monitor.passes >= 1, what="the health monitor's first pass")
    made: dict[tuple[str, str, str], int] = {}
    for r in cluster.requests.records:
        if r.user_agent.startswith(AGENT) and r.verb in ("list", "watch") and r.resource in ("pods", "nodes"):
            key = (r.verb, r.resource, r.namespace)
            made[key] = made.get(key, 0) + 1
    return made


async def create_pod(raw: RawApi, namespace: str, name: str) -> None:
    code, body = await raw.request(
        "POST", f"/api/v1/namespaces/{namespace}/pods", body=pods.pod_manifest(name, namespace=namespace)
    )
    assert code == 201, body


ONE_CLUSTER_WIDE_EACH = {
    ("list", "pods", ""): 1,
    ("watch", "pods", ""): 1,
    ("list", "nodes", ""): 1,
    ("watch", "nodes", ""): 1,
}


async def test_the_kubelet_scheduler_and_pod_gc_share_one_pod_watch_and_one_node_watch(
    devcluster: DevCluster, raw: RawApi, clock: FakeClock
) -> None:
    await create_pod(raw, "default", "before")
    devcluster.requests.reset()
    async with PodSimulator(devcluster.kubeconfig_path, nodes=2, clock=clock) as sim:
        gc = sim.pod_gc
        assert gc is not None
        await eventually(lambda: gc.passes >= 1, what="the pod GC's first pass")
        assert ("default", "before") in gc.pods and set(gc.nodes) == set(sim.node_names)
        await create_pod(raw, "default", "after")
        await eventually(lambda: ("default", "after") in gc.pods, what="the new pod in the GC's cache")
        await sim.wait_for_phase("default", "after", "Running")
        assert await watches_made(devcluster, sim) == ONE_CLUSTER_WIDE_EACH
        # the health monitor's Lease cache: one LIST and one WATCH of kube-node-lease
        leases = [
            (r.verb, r.namespace)
            for r in devcluster.requests.records
            if r.user_agent.startswith(AGENT) and r.resource == "leases" and r.verb in ("list", "watch")
        ]
        assert sorted(leases) == [("list", "kube-node-lease"), ("watch", "kube-node-lease")]


async def test_a_namespaced_simulator_shares_its_cluster_wide_pod_watch_with_the_pod_gc(
    devcluster: DevCluster, raw: RawApi, clock: FakeClock
) -> None:
    code, body = await raw.request(
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    )
    assert code == 201, body
    await create_pod(raw, "default", "elsewhere")
    devcluster.requests.reset()
    async with PodSimulator(devcluster.kubeconfig_path, nodes=2, clock=clock, namespace="team-a") as sim:
        gc = sim.pod_gc
        assert gc is not None
        await create_pod(raw, "team-a", "mine")
        await sim.wait_for_phase("team-a", "mine", "Running")
        await eventually(lambda: ("team-a", "mine") in gc.pods, what="the pod in the GC's cache")
        assert ("default", "elsewhere") in gc.pods  # the collector looks at every namespace
        assert sim.pod("default", "elsewhere") is None  # the simulator only at its own
        assert sim.remembered()["pods"] == 1
        assert await watches_made(devcluster, sim) == ONE_CLUSTER_WIDE_EACH


async def test_a_namespaced_simulator_without_node_controllers_watches_its_namespace_only(
    devcluster: DevCluster, raw: RawApi, clock: FakeClock
) -> None:
    devcluster.requests.reset()
    async with PodSimulator(
        devcluster.kubeconfig_path, nodes=1, clock=clock, namespace="default", node_controllers=False
    ) as sim:
        await create_pod(raw, "default", "only")
        await sim.wait_for_phase("default", "only", "Running")
        assert await watches_made(devcluster, sim) == {
            ("list", "pods", "default"): 1,
            ("watch", "pods", "default"): 1,
            ("list", "nodes", ""): 1,
            ("watch", "nodes", ""): 1,
        }
