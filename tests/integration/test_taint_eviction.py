"""A node failure end to end on devcluster: the taint-eviction controller the pod simulator runs
(devcluster/controllers/taintevict.py) deletes a training pod whose node gets a NoExecute taint
— at once when no toleration matches, after `tolerationSeconds` when one does (the simulator's
FakeClock is advanced; nothing sleeps for it) — marking it `DisruptionTarget=True`, reason
`DeletionByTaintManager`, first; kubetrain recreates it without counting the restart against
backoffLimit (docs/behaviour.md §6). The operator's pods carry the not-ready/unreachable
tolerations of the DefaultTolerationSeconds admission plugin, as on a real cluster."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import NODES

from .controller_support import Harness, eventually, is_true, replica_status
from .node_controllers_support import running_worker

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
MAINTENANCE = {"key": "example.com/maintenance", "value": "now", "effect": "NoExecute"}
DEFAULT_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]


class PodWatch:
    """Every version of pod `name` the API server sends on a watch (to see the one it had
    between the taint and its deletion)."""

    def __init__(self, kubeconfig: str, namespace: str, name: str) -> None:
        self.kubeconfig, self.namespace, self.name = kubeconfig, namespace, name
        self.seen: list[tuple[str, Obj]] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        api = await RawApi.from_kubeconfig(self.kubeconfig, "taint-eviction-test")
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        code, listed = await api.request("GET", path)
        assert code == 200, listed
        ready = asyncio.Event()

        async def run() -> None:
            try:
                query = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"]}
                ready.set()
                async for ev in api.stream(path, query):
                    if ev["object"]["metadata"]["name"] == self.name:
                        self.seen.append((ev["type"], ev["object"]))
            finally:
                await api.close()

        self._task = asyncio.ensure_future(run())
        await ready.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def disrupted_before_deletion(self, uid: str) -> Obj | None:
        """The DisruptionTarget condition pod `uid` had when it was marked for deletion."""
        for kind, pod in self.seen:
            if (
                kind == "MODIFIED"
                and pod["metadata"]["uid"] == uid
                and pod["metadata"].get("deletionTimestamp")
            ):
                for cond in pod["status"].get("conditions") or []:
                    if cond["type"] == "DisruptionTarget":
                        return dict(cond)
        return None


async def set_taints(h: Harness, node: str, *taints: Obj) -> None:
    await h.kube.patch(NODES, None, node, {"spec": {"taints": list(taints) or None}})


async def eviction_events(h: Harness, ns: str, pod: str, messages: list[str]) -> list[Obj]:
    """The pod's TaintManagerEviction Events once their messages are `messages` (Events are
    recorded on their own, after the write that caused them)."""

    async def check() -> list[Obj] | None:
        events = [e for e in await h.events(ns, pod) if e["reason"] == "TaintManagerEviction"]
        return events if [e["message"] for e in events] == messages else None

    found: list[Obj] = await eventually(check, what=f"events {messages}")
    return found


async def set_ready(h: Harness, node: str, status: str) -> None:
    """The node's Ready condition as its kubelet (or the node controller, for a silent one) sets it."""
    current = await h.kube.get(NODES, None, node)
    conditions = [
        {**c, "status": status} if c["type"] == "Ready" else c for c in current["status"]["conditions"]
    ]
    await h.kube.patch_status(NODES, None, node, {"status": {"conditions": conditions}})


async def taints_of(h: Harness, node: str) -> list[tuple[str, str]]:
    current = await h.kube.get(NODES, None, node)
    return [(t["key"], t["effect"]) for t in current["spec"].get("taints") or []]


async def test_an_untolerated_no_execute_taint_evicts_the_worker_and_kubetrain_recreates_it(
    clocked_env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, _ = clocked_env
    ns = await h.namespace("taint")
    worker = await running_worker(h, ns, "te")
    assert worker["spec"]["tolerations"] == DEFAULT_TOLERATIONS  # added at admission, as upstream
    node, uid = worker["spec"]["nodeName"], worker["metadata"]["uid"]
    watch = PodWatch(stack.cluster.kubeconfig_path, ns, "te-worker-0")
    await watch.start()
    try:
        await set_taints(h, node, MAINTENANCE)
        recreated = await h.wait_recreated(ns, "te-worker-0", uid)
    finally:
        await set_taints(h, node)
        await watch.stop()
    disrupted = watch.disrupted_before_deletion(uid)
    assert disrupted is not None and disrupted.pop("lastTransitionTime")
    assert disrupted == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
        "observedGeneration": 1,  # the pod's generation (PodObservedGenerationTracking, GA)
        "lastProbeTime": None,  # a zero metav1.Time, as Go writes it
    }
    assert recreated["spec"]["nodeName"] != node  # the scheduler keeps it off the tainted node
    events = await eviction_events(h, ns, "te-worker-0", [f"Marking for deletion Pod {ns}/te-worker-0"])
    assert events[0]["source"] == {"component": "taint-eviction-controller"}
    # backoffLimit 0: a counted restart would have failed the job
    job = await h.wait_condition("PyTorchJob", ns, "te", "Running")
    assert not is_true(job, "Failed")
    assert replica_status(job, "Worker").get("restarts", 0) == 0


async def test_the_default_toleration_keeps_the_pod_300_seconds_on_an_unreachable_node(
    clocked_env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, clock = clocked_env
    assert stack.simulator is not None and stack.simulator.evictions is not None
    ns = await h.namespace("unreach")
    worker = await running_worker(h, ns, "ur")
    node, uid = worker["spec"]["nodeName"], worker["metadata"]["uid"]
    evictions = stack.simulator.evictions
    try:
        await set_ready(h, node, "Unknown")  # the node stopped reporting
        key = (ns, "ur-worker-0")
        due = await eventually(lambda: _due(evictions.pending, key), what="the worker's eviction planned")
        assert due == pytest.approx(clock.monotonic() + 300)
        await clock.advance(299)
        still = await h.pod(ns, "ur-worker-0")
        assert (
            still is not None
            and still["metadata"]["uid"] == uid
            and not still["metadata"].get("deletionTimestamp")
        )
        await clock.advance(1)
        recreated = await h.wait_recreated(ns, "ur-worker-0", uid)
    finally:
        await set_ready(h, node, "True")
    assert recreated["spec"]["nodeName"] != node  # unreachable:NoSchedule keeps it away
    await eviction_events(h, ns, "ur-worker-0", [f"Marking for deletion Pod {ns}/ur-worker-0"])
    job = await h.wait_condition("PyTorchJob", ns, "ur", "Running")
    assert replica_status(job, "Worker").get("restarts", 0) == 0


async def test_a_node_ready_again_in_time_cancels_the_eviction(
    clocked_env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, clock = clocked_env
    assert stack.simulator is not None and stack.simulator.evictions is not None
    ns = await h.namespace("back")
    worker = await running_worker(h, ns, "bk")
    node, uid = worker["spec"]["nodeName"], worker["metadata"]["uid"]
    evictions = stack.simulator.evictions
    key = (ns, "bk-worker-0")
    try:
        await set_ready(h, node, "False")
        await eventually(lambda: _due(evictions.pending, key), what="the worker's eviction planned")
        assert await taints_of(h, node) == [
            ("node.kubernetes.io/not-ready", "NoSchedule"),
            ("node.kubernetes.io/not-ready", "NoExecute"),
        ]
        await clock.advance(120)
    finally:
        await set_ready(h, node, "True")
    await eventually(lambda: _untainted(h, node), what="the node controller's taints removed")
    await eventually(lambda: _gone(evictions.pending, key), what="the eviction cancelled")
    await clock.advance(600)
    pod = await h.pod(ns, "bk-worker-0")
    assert pod is not None and pod["metadata"]["uid"] == uid
    await eviction_events(h, ns, "bk-worker-0", [f"Cancelling deletion of Pod {ns}/bk-worker-0"])


async def _due(pending: dict[tuple[str, str], float], key: tuple[str, str]) -> float | None:
    return pending.get(key)


async def _gone(pending: dict[tuple[str, str], float], key: tuple[str, str]) -> bool | None:
    return True if key not in pending else None


async def _untainted(h: Harness, node: str) -> bool:
    return await taints_of(h, node) == []


async def test_a_cordoned_node_carries_the_unschedulable_taint_until_uncordoned(
    clocked_env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, _ = clocked_env
    assert stack.simulator is not None
    node = stack.simulator.node_names[0]
    await h.kube.patch(NODES, None, node, {"spec": {"unschedulable": True}})
    try:
        await eventually(
            lambda: _tainted(h, node, [("node.kubernetes.io/unschedulable", "NoSchedule")]),
            what="the unschedulable taint",
        )
        tainted = await h.kube.get(NODES, None, node)
        assert tainted["spec"]["taints"][0]["timeAdded"]  # SwapNodeControllerTaint stamps it
    finally:
        await h.kube.patch(NODES, None, node, {"spec": {"unschedulable": None}})
    await eventually(lambda: _untainted(h, node), what="the unschedulable taint removed")


async def _tainted(h: Harness, node: str, expected: list[tuple[str, str]]) -> bool:
    return await taints_of(h, node) == expected
