"""The simulated scheduler's inter-pod filters on devcluster, with the operator running: a
PyTorchJob whose workers have required anti-affinity on `kubernetes.io/hostname` gets one worker
per node and the worker no node takes stays Pending with kube-scheduler's FailedScheduling
message; pods spread with `maxSkew: 1` across zone labels alternate zones where round-robin over
the nodes would not; `matchLabelKeys` is merged into the selector when the pod is created."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import PODS

from .controller_support import Harness, eventually, job_manifest, label_nodes, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
ANTI_MESSAGE = (
    "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
    "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for pair in open_stack(api_groups=("kubetrain.io",)):
        await label_nodes(*pair, {ZONE: "a"}, {ZONE: "a"}, {ZONE: "b"})
        yield pair


def scheduled(pod: Obj) -> str | None:
    return (pod.get("spec") or {}).get("nodeName")


def unschedulable_message(pod: Obj) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return str(c.get("message"))
    return None


async def test_worker_anti_affinity_one_per_node_leaves_the_extra_worker_pending(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("anti")
    job = job_manifest("PyTorchJob", "apart", {"Master": 1, "Worker": 4})
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    worker.setdefault("metadata", {}).setdefault("labels", {})["spread"] = "apart"
    term = {"labelSelector": {"matchLabels": {"spread": "apart"}}, "topologyKey": "kubernetes.io/hostname"}
    worker["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    await h.create_job(job, ns)

    async def placed() -> tuple[list[Obj], list[Obj]] | None:
        workers = [p for p in await h.pods(ns, "apart") if "-worker-" in p["metadata"]["name"]]
        bound = [p for p in workers if scheduled(p)]
        pending = [p for p in workers if unschedulable_message(p)]
        return (bound, pending) if len(bound) == 3 and len(pending) == 1 else None

    bound, pending = await eventually(placed, what="three workers bound, one Pending")
    assert sorted(str(scheduled(p)) for p in bound) == sorted(h.sim.node_names)  # one per node
    assert unschedulable_message(pending[0]) == ANTI_MESSAGE
    name = pending[0]["metadata"]["name"]
    event = await h.wait_event(ns, name, "FailedScheduling")
    assert event["message"] == ANTI_MESSAGE and event["type"] == "Warning"
    master = await h.pod(ns, "apart-master-0")
    assert master is not None and scheduled(master)  # its labels match no term: it goes anywhere


async def test_topology_spread_max_skew_one_alternates_zones(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("spread")
    zones = {n: ("b" if i == 2 else "a") for i, n in enumerate(h.sim.node_names)}
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
        "matchLabelKeys": ["run"],
    }
    placed: list[str] = []
    for i in range(4):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"s{i}", "labels": {"app": "spread", "run": "r1"}},
            "spec": {
                "containers": [{"name": "main", "image": "busybox:1.36"}],
                "topologySpreadConstraints": [constraint],
            },
        }
        created = await h.kube.create(PODS, pod, namespace=ns)
        # the API server merged matchLabelKeys into the selector at create
        exprs = created["spec"]["topologySpreadConstraints"][0]["labelSelector"].get("matchExpressions")
        assert exprs == [{"key": "run", "operator": "In", "values": ["r1"]}]
        got = await eventually(lambda i=i: _node(h, ns, f"s{i}"), what=f"s{i} bound")
        placed.append(zones[got])
    # round-robin over the nodes (a, a, b, a) would put three in zone a
    assert Counter(placed) == {"a": 2, "b": 2}
    assert placed[1] != placed[0] and placed[3] != placed[2]


async def _node(h: Harness, ns: str, name: str) -> str | None:
    pod = await h.pod(ns, name)
    return scheduled(pod) if pod else None
