"""The pod garbage collector end to end on devcluster (devcluster/controllers/podgc.py): a Node
deleted from under a running PyTorchJob leaves its pods bound to a node that no longer exists;
40 s after PodGC first sees them (its quarantine) it marks each Failed with
`DisruptionTarget=True` (reason DeletionByPodGC) and force-deletes it, and kubetrain recreates the
worker on another node without counting a restart — the disruption condition is what tells it
the training code did not fail. The simulator's FakeClock is advanced; nothing sleeps for it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import NODES

from .controller_support import Harness, eventually, replica_status
from .node_controllers_support import gc_pass, running_worker

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


def _disrupted_by_pod_gc(pod: Obj | None) -> bool:
    status = (pod or {}).get("status") or {}
    return status.get("phase") == "Failed" and any(
        c.get("type") == "DisruptionTarget"
        and c.get("status") == "True"
        and c.get("reason") == "DeletionByPodGC"
        for c in status.get("conditions") or []
    )


async def test_the_pods_of_a_deleted_node_are_failed_and_deleted_after_the_quarantine(
    clocked_env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, clock = clocked_env
    sim = stack.simulator
    assert sim is not None and sim.pod_gc is not None
    ns = await h.namespace("node-gone")
    worker = await running_worker(h, ns, "ng")
    node, uid = worker["spec"]["nodeName"], worker["metadata"]["uid"]
    others = [n for n in sim.node_names if n != node]
    before = sim.pod_gc.deleted["orphaned"]
    # what the simulator's watch sees of the worker: its Failed status before it is gone
    failed_seen = asyncio.ensure_future(
        sim.wait_for(ns, "ng-worker-0", _disrupted_by_pod_gc, wait_seconds=60)
    )
    try:
        sim.stop_node(node)  # the machine is gone: no kubelet posts anything for it
        await h.kube.delete(NODES, None, node)
        gc = sim.pod_gc  # its Node cache follows a watch, as upstream's informer does
        await eventually(lambda: node not in gc.nodes, what="the deletion in pod GC's Node cache")
        await gc_pass(stack, clock)  # the pass that first sees the node missing
        await gc_pass(stack, clock)  # 20 s into the quarantine: nothing happens
        still = await h.pod(ns, "ng-worker-0")
        assert still is not None and still["metadata"]["uid"] == uid
        assert still["status"]["phase"] == "Running" and not still["metadata"].get("deletionTimestamp")
        await gc_pass(stack, clock)  # 40 s: a live GET confirms the node is gone
        failed = await failed_seen
        assert failed is not None and failed["metadata"]["uid"] == uid
        disrupted = next(c for c in failed["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert disrupted["message"] == "PodGC: node no longer exists"
        recreated = await h.wait_recreated(ns, "ng-worker-0", uid)
        assert recreated["spec"]["nodeName"] in others
        assert sim.pod_gc.deleted["orphaned"] - before >= 1
        job = await h.wait_condition("PyTorchJob", ns, "ng", "Running")
        assert replica_status(job, "Worker").get("restarts", 0) == 0  # backoffLimit 0 not spent
        assert job["status"]["conditions"][-1]["type"] == "Running"
    finally:
        failed_seen.cancel()
        await asyncio.gather(failed_seen, return_exceptions=True)
        await sim.start_node(node)  # a kubelet registering again creates its Node
    await eventually(lambda: h.kube.get(NODES, None, node), what="the node registered again")
