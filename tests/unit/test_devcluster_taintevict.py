"""The taint-eviction controller (devcluster/controllers/taintevict.py) over a recording API and
a FakeClock: which pods a NoExecute taint deletes, when, what is written first, and the Events."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubetrain.devcluster.controllers.taintevict import TaintEviction
from kubetrain.kube.clock import FakeClock

Obj = dict[str, Any]
NODE = "node-0"


class RecordingApi:
    """Pods by path; records every write as (method, path, body)."""

    def __init__(self) -> None:
        self.pods: dict[str, Obj] = {}
        self.writes: list[tuple[str, str, Any]] = []

    async def request(
        self, method: str, path: str, *, query: Any = None, body: Any = None
    ) -> tuple[int, Any]:
        if method == "GET":
            pod = self.pods.get(path)
            return (200, copy.deepcopy(pod)) if pod is not None else (404, {"reason": "NotFound"})
        self.writes.append((method, path, copy.deepcopy(body)))
        if method == "PUT" and path.endswith("/status"):
            self.pods[path.removesuffix("/status")]["status"] = body["status"]
            return 200, body
        if method == "DELETE":
            return (200, self.pods.pop(path)) if path in self.pods else (404, {})
        return 201, body

    def events(self) -> list[str]:
        return [b["message"] for m, p, b in self.writes if p.endswith("/events")]

    def deleted(self) -> list[str]:
        return [p.rsplit("/", 1)[1] for m, p, _ in self.writes if m == "DELETE"]


def pod(name: str, *tolerations: Obj) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"nodeName": NODE, "tolerations": list(tolerations)},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def node(*taints: Obj) -> Obj:
    return {"metadata": {"name": NODE}, "spec": {"taints": list(taints)}}


FAILED = {"key": "example.com/failed", "effect": "NoExecute"}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}


def tol(key: str, seconds: int | None = None) -> Obj:
    out: Obj = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


class Cluster:
    def __init__(self) -> None:
        self.api = RecordingApi()
        self.clock = FakeClock()
        self.pods: dict[tuple[str, str], Obj] = {}
        raw: Any = self.api  # stands in for RawApi: only request() is used
        self.controller = TaintEviction(lambda: raw, self.clock, self.pods)

    async def add(self, *pods: Obj) -> None:
        for p in pods:
            key = (p["metadata"]["namespace"], p["metadata"]["name"])
            self.pods[key] = p
            self.api.pods[f"/api/v1/namespaces/ns/pods/{key[1]}"] = p
            self.controller.observe_pod("ADDED", p)
        await self.clock.advance(0)

    async def taint(self, *taints: Obj) -> None:
        self.controller.observe_node("MODIFIED", node(*taints))
        await self.clock.advance(0)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster()
    c.controller.observe_node("ADDED", node())
    yield c
    await c.controller.stop()


async def test_an_untolerated_taint_deletes_at_once_after_marking_the_pod_disrupted(
    cluster: Cluster,
) -> None:
    await cluster.add(pod("plain"), pod("tolerant", tol(FAILED["key"])))
    await cluster.taint(FAILED)
    path = "/api/v1/namespaces/ns/pods/plain"
    pod_writes = [(m, p, b) for m, p, b in cluster.api.writes if "/pods/" in p]
    assert [(m, p) for m, p, _ in pod_writes] == [("PUT", f"{path}/status"), ("DELETE", path)]
    assert cluster.api.events() == ["Marking for deletion Pod ns/plain"]  # recorded on its own, as upstream
    status = pod_writes[0][2]["status"]
    assert status["conditions"][-1] == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
        "lastProbeTime": None,
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }
    assert cluster.controller.pending == {}  # the tolerant pod is never evicted


async def test_a_tolerated_taint_evicts_after_the_smallest_toleration_seconds(cluster: Cluster) -> None:
    await cluster.add(pod("short", tol(UNREACHABLE["key"], 30)), pod("default", tol(UNREACHABLE["key"], 300)))
    await cluster.taint(UNREACHABLE)
    assert cluster.controller.pending == {("ns", "short"): 30.0, ("ns", "default"): 300.0}
    await cluster.clock.advance(29)
    assert cluster.api.deleted() == []
    await cluster.clock.advance(1)
    assert cluster.api.deleted() == ["short"]
    await cluster.clock.advance(269)
    assert cluster.api.deleted() == ["short"]
    await cluster.clock.advance(1)
    assert cluster.api.deleted() == ["short", "default"]


async def test_removing_the_taint_cancels_a_pending_eviction_with_an_event(cluster: Cluster) -> None:
    await cluster.add(pod("w", tol(UNREACHABLE["key"], 300)))
    await cluster.taint(UNREACHABLE)
    await cluster.clock.advance(100)
    await cluster.taint()
    assert cluster.api.events() == ["Cancelling deletion of Pod ns/w"]
    await cluster.clock.advance(1000)
    assert cluster.api.deleted() == []
    # tainted again: a new plan, counted from now
    await cluster.taint(UNREACHABLE)
    assert cluster.controller.pending == {("ns", "w"): 1400.0}


async def test_a_pod_tolerating_forever_is_never_evicted(cluster: Cluster) -> None:
    await cluster.add(pod("forever", tol(UNREACHABLE["key"])))
    await cluster.taint(UNREACHABLE)
    await cluster.clock.advance(10**6)
    assert cluster.api.writes == []


async def test_a_pod_bound_to_a_tainted_node_is_planned_and_its_deletion_cancels(
    cluster: Cluster,
) -> None:
    await cluster.taint(UNREACHABLE)
    await cluster.add(pod("late", tol(UNREACHABLE["key"], 60)))
    assert cluster.controller.pending == {("ns", "late"): 60.0}
    # status-only updates (same node, same tolerations) do not re-plan
    cluster.controller.observe_pod("MODIFIED", pod("late", tol(UNREACHABLE["key"], 60)))
    assert cluster.controller.pending == {("ns", "late"): 60.0}
    cluster.controller.observe_pod("DELETED", pod("late", tol(UNREACHABLE["key"], 60)))
    await cluster.clock.advance(0)
    assert cluster.controller.pending == {}
    assert cluster.api.events() == ["Cancelling deletion of Pod ns/late"]


async def test_a_second_tolerated_taint_does_not_postpone_the_eviction(cluster: Cluster) -> None:
    await cluster.add(pod("w", tol(UNREACHABLE["key"], 60), tol(FAILED["key"], 600)))
    await cluster.taint(UNREACHABLE)
    await cluster.clock.advance(10)
    await cluster.taint(UNREACHABLE, FAILED)
    assert cluster.controller.pending == {("ns", "w"): 60.0}
    await cluster.clock.advance(50)
    assert cluster.api.deleted() == ["w"]
