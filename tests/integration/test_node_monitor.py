"""A node whose kubelet stops, end to end on devcluster: the node lifecycle controller's health
monitor (devcluster/controllers/nodehealth.py) marks it Unknown once its Lease has not been renewed
for the grace period, the node gets the unreachable taints, and the taint-eviction controller
deletes the PyTorchJob's worker 300 s later (the DefaultTolerationSeconds toleration). The pod
stays Terminating, as on a cluster, since no kubelet confirms it stopped — until the node is
given the `node.kubernetes.io/out-of-service` taint (kubernetes.io's non-graceful node shutdown
procedure): the pod garbage collector (devcluster/controllers/podgc.py) then force-deletes it
at its next pass and kubetrain recreates it on another node without counting a restart. The
simulator's FakeClock is advanced; nothing sleeps for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import NODES

from .controller_support import Harness, eventually, replica_status
from .node_controllers_support import gc_pass, heartbeats, running_worker

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


async def ready_of(h: Harness, node: str) -> Obj:
    current = await h.kube.get(NODES, None, node)
    return next(c for c in current["status"]["conditions"] if c["type"] == "Ready")


async def taints_of(h: Harness, node: str) -> list[tuple[str, str]]:
    current = await h.kube.get(NODES, None, node)
    return [(t["key"], t["effect"]) for t in current["spec"].get("taints") or []]


OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}


async def edit_node(h: Harness, name: str, edit: Callable[[Obj], None]) -> None:
    """Replace the Node with `edit` applied to its latest version, read again after a conflict
    (the node controllers write it too)."""
    for _ in range(20):
        node = await h.kube.get(NODES, None, name)
        edit(node)
        try:
            await h.kube.replace(NODES, node)
            return
        except ApiError as err:
            if not err.is_conflict:
                raise
    raise AssertionError(f"node {name}: 20 conflicts in a row")


def _add_out_of_service(node: Obj) -> None:
    node["spec"]["taints"] = [*(node["spec"].get("taints") or []), OUT_OF_SERVICE]


def _out_of_service(node: Obj | None) -> bool:
    return any(
        t.get("key") == OUT_OF_SERVICE["key"] for t in ((node or {}).get("spec") or {}).get("taints") or []
    )


def _remove_out_of_service(node: Obj) -> None:
    taints = [t for t in node["spec"].get("taints") or [] if t["key"] != OUT_OF_SERVICE["key"]]
    node["spec"]["taints"] = taints or None


async def test_a_stopped_kubelet_makes_the_node_unknown_and_its_worker_is_evicted(
    clocked_env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, clock = clocked_env
    sim = stack.simulator
    assert sim is not None
    ns = await h.namespace("kubelet-lost")
    worker = await running_worker(h, ns, "kl")
    node, uid = worker["spec"]["nodeName"], worker["metadata"]["uid"]
    others = [n for n in sim.node_names if n != node]
    try:
        sim.stop_node(node)
        await heartbeats(stack, clock, 4)  # 40 s without a renewal: still within the grace period
        assert (await ready_of(h, node))["status"] == "True"
        await heartbeats(stack, clock, 3)  # past 50 s
        assert (await ready_of(h, node))["status"] == "Unknown"
        ready = await ready_of(h, node)
        assert ready["reason"] == "NodeStatusUnknown"
        assert ready["message"] == "Kubelet stopped posting node status."
        for other in others:  # their kubelets kept renewing
            assert (await ready_of(h, other))["status"] == "True"
        await eventually(
            lambda: _tainted(h, node),
            what="the unreachable taints",
        )
        evictions = sim.evictions
        assert evictions is not None
        due = await eventually(lambda: _due(evictions.pending, (ns, "kl-worker-0")), what="eviction planned")
        await clock.advance(due - clock.monotonic())
        terminating = await eventually(lambda: _terminating(h, ns, "kl-worker-0"), what="the worker deleted")
        assert terminating["metadata"]["uid"] == uid
        disrupted = next(c for c in terminating["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (disrupted["status"], disrupted["reason"]) == ("True", "DeletionByTaintManager")
        # no kubelet confirms the pod stopped: it stays Terminating, its status as last posted,
        # through pod GC passes too (the node is not Ready, but not out of service)
        await gc_pass(stack, clock)
        await gc_pass(stack, clock)
        still = await h.pod(ns, "kl-worker-0")
        assert still is not None and still["metadata"]["uid"] == uid
        assert still["status"]["phase"] == "Running"
        # what an operator does for a node that is shut down for good: mark it out of service
        gc = sim.pod_gc
        assert gc is not None
        before = gc.deleted["out-of-service"]
        await edit_node(h, node, _add_out_of_service)
        await eventually(lambda: _out_of_service(gc.nodes.get(node)), what="the taint in pod GC's Node cache")
        await gc_pass(stack, clock)  # the pass force-deletes it (its DELETE is done)
        after = await h.pod(ns, "kl-worker-0")
        assert after is None or after["metadata"]["uid"] != uid
        assert gc.deleted["out-of-service"] - before == 1
        recreated = await h.wait_recreated(ns, "kl-worker-0", uid)
        assert recreated["spec"]["nodeName"] in others  # unreachable:NoSchedule keeps it away
        job = await h.wait_condition("PyTorchJob", ns, "kl", "Running")
        assert replica_status(job, "Worker").get("restarts", 0) == 0  # backoffLimit 0 not spent
    finally:
        await sim.start_node(node)
        # the procedure's last step: the node is back, its out-of-service taint removed
        await edit_node(h, node, _remove_out_of_service)
    await eventually(lambda: _ready_untainted(h, node), what="the node Ready again, untainted")


async def _tainted(h: Harness, node: str) -> bool | None:
    taints = await taints_of(h, node)
    key = "node.kubernetes.io/unreachable"
    wanted = [(key, "NoSchedule"), (key, "NoExecute")]
    return True if sorted(taints) == sorted(wanted) else None


async def _due(pending: dict[tuple[str, str], float], key: tuple[str, str]) -> float | None:
    return pending.get(key)


async def _terminating(h: Harness, ns: str, name: str) -> Obj | None:
    pod = await h.pod(ns, name)
    return pod if pod is not None and pod["metadata"].get("deletionTimestamp") else None


async def _ready_untainted(h: Harness, node: str) -> bool | None:
    ready = await ready_of(h, node)
    return True if ready["status"] == "True" and await taints_of(h, node) == [] else None
