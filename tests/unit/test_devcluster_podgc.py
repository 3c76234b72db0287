"""The pod garbage collector (devcluster/controllers/podgc.py) over a fake API and a FakeClock:
its watch-fed caches (a pass lists nothing), a pass every 20 s, the orphan quarantine and its
live node lookup, the status written before the force deletion, and what a conflict or a
replaced pod does."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubetrain.devcluster.controllers.podgc import PodGC
from kubetrain.kube.clock import FakeClock

Obj = dict[str, Any]
PODS = "/api/v1/namespaces/ns/pods/"


class FakeApi:
    """Pods and Nodes by name; records every write; `conflicts` status PUTs answer 409 first;
    `node_errors` answers a node GET with that code."""

    def __init__(self) -> None:
        self.pods: dict[str, Obj] = {}
        self.nodes: dict[str, Obj] = {}
        self.writes: list[tuple[str, str, Any]] = []
        self.conflicts = 0
        self.node_errors: dict[str, int] = {}
        self.replaced: set[str] = set()  # pods replaced (new uid) right before their DELETE
        self.lists: list[str] = []  # the collections listed
        self.streams: dict[str, asyncio.Queue[Obj]] = {}  # watch events to deliver, by path

    async def request(
        self, method: str, path: str, *, query: Any = None, body: Any = None
    ) -> tuple[int, Any]:
        if method == "GET" and path in ("/api/v1/pods", "/api/v1/nodes"):
            self.lists.append(path)
            items = self.pods if path == "/api/v1/pods" else self.nodes
            return 200, {"items": copy.deepcopy(list(items.values())), "metadata": {"resourceVersion": "1"}}
        if method == "GET" and path.startswith("/api/v1/nodes/"):
            name = path.rsplit("/", 1)[1]
            if name in self.node_errors:
                return self.node_errors[name], {"message": "etcd timeout"}
            return (200, self.nodes[name]) if name in self.nodes else (404, {"reason": "NotFound"})
        name = path.removeprefix(PODS).removesuffix("/status")
        if method == "GET":
            return (200, copy.deepcopy(self.pods[name])) if name in self.pods else (404, {})
        self.writes.append((method, path, copy.deepcopy(body)))
        if method == "PUT":
            if self.conflicts:
                self.conflicts -= 1
                return 409, {"reason": "Conflict"}
            self.pods[name]["status"] = body["status"]
            return 200, body
        assert method == "DELETE"
        if name in self.replaced:
            self.pods[name]["metadata"]["uid"] = "new-uid"
        current = self.pods.get(name)
        if current is None:
            return 404, {}
        if body["preconditions"]["uid"] != current["metadata"]["uid"]:
            return 409, {"reason": "Conflict"}
        return 200, self.pods.pop(name)

    async def stream(self, path: str, query: Any) -> AsyncIterator[Obj]:
        queue = self.streams.setdefault(path, asyncio.Queue())
        while True:
            yield await queue.get()

    def deleted(self) -> list[str]:
        return [p.rsplit("/", 1)[1] for m, p, _ in self.writes if m == "DELETE"]


def pod(name: str, node: str, phase: str = "Running", **md: Any) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", **md},
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }


def node(name: str) -> Obj:
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


@pytest.fixture
def api() -> FakeApi:
    fake = FakeApi()
    fake.nodes = {"n1": node("n1"), "n2": node("n2")}
    return fake


async def synced(gc: PodGC, api: FakeApi) -> None:
    """The caches caught up with the API, as its watches would have them."""
    await gc.relist_pods(copy.deepcopy(list(api.pods.values())))
    await gc.relist_nodes(copy.deepcopy(list(api.nodes.values())))


async def gc_pass(gc: PodGC, api: FakeApi) -> None:
    await synced(gc, api)
    await gc.gc()


async def passes(gc: PodGC, clock: FakeClock, seconds: float) -> None:
    """Advance the clock by `seconds` and wait for the pass due then."""
    done = gc.passes
    await clock.advance(seconds)
    for _ in range(100):
        if gc.passes > done:
            return
        await asyncio.sleep(0)
    raise AssertionError("no pass ran")


async def test_pods_of_a_deleted_node_go_after_the_forty_second_quarantine(api: FakeApi) -> None:
    clock = FakeClock()
    api.pods = {"w": pod("w", "n1"), "m": pod("m", "n2")}
    gc = PodGC(lambda: api, clock)  # type: ignore[arg-type, return-value]
    await synced(gc, api)
    task = asyncio.ensure_future(gc.passes_forever())
    try:
        await passes(gc, clock, 0)  # the first pass runs at once
        await gc.observe_node("DELETED", api.nodes.pop("n1"))
        await passes(gc, clock, 20)  # t=20: seen missing, quarantined until t=60
        assert gc.quarantine.waiting() == {"n1": 60.0}
        await passes(gc, clock, 20)  # t=40
        assert api.writes == []
        await passes(gc, clock, 20)  # t=60: still gone on a live GET
        assert api.deleted() == ["w"]
        (put, put_path, written), (_, _, options) = api.writes
        assert (put, put_path) == ("PUT", PODS + "w/status")
        assert written["status"]["phase"] == "Failed"
        (condition,) = written["status"]["conditions"]
        assert condition["type"] == "DisruptionTarget" and condition["reason"] == "DeletionByPodGC"
        assert condition["lastTransitionTime"] == "2024-01-01T00:01:00Z"  # the clock's wall time
        assert options["gracePeriodSeconds"] == 0 and options["preconditions"] == {"uid": "uid-w"}
        assert "m" in api.pods and gc.deleted == {"orphaned": 1}
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_node_back_before_its_quarantine_ends_keeps_its_pods(api: FakeApi) -> None:
    clock = FakeClock()
    api.pods = {"w": pod("w", "n1")}
    gc = PodGC(lambda: api, clock)  # type: ignore[arg-type, return-value]
    saved = api.nodes.pop("n1")
    await gc_pass(gc, api)
    api.nodes["n1"] = saved
    await clock.advance(40)
    await gc_pass(gc, api)
    assert api.writes == [] and gc.quarantine.waiting() == {}


async def test_a_node_lookup_that_fails_is_not_taken_for_a_deletion(api: FakeApi) -> None:
    clock = FakeClock()
    api.pods = {"w": pod("w", "gone")}
    api.node_errors["gone"] = 500
    gc = PodGC(lambda: api, clock)  # type: ignore[arg-type, return-value]
    await gc_pass(gc, api)
    await clock.advance(40)
    await gc_pass(gc, api)
    assert api.writes == []
    del api.node_errors["gone"]  # seen missing again at t=40: a new quarantine until t=80
    await gc_pass(gc, api)
    await clock.advance(40)
    await gc_pass(gc, api)
    assert api.deleted() == ["w"]


async def test_a_conflicting_status_write_is_read_and_written_again(api: FakeApi) -> None:
    clock = FakeClock()
    api.pods = {"w": pod("w", "gone")}
    gc = PodGC(lambda: api, clock)  # type: ignore[arg-type, return-value]
    await gc_pass(gc, api)
    await clock.advance(40)
    api.conflicts = 2
    await gc_pass(gc, api)
    assert [m for m, _, _ in api.writes] == ["PUT", "PUT", "PUT", "DELETE"]
    assert api.deleted() == ["w"]


async def test_a_pod_replaced_under_the_same_name_is_left_alone(api: FakeApi) -> None:
    clock = FakeClock()
    api.pods = {"w": pod("w", "gone", "Succeeded")}
    api.replaced.add("w")
    gc = PodGC(lambda: api, clock)  # type: ignore[arg-type, return-value]
    await gc_pass(gc, api)
    await clock.advance(40)
    await gc_pass(gc, api)
    assert api.pods["w"]["metadata"]["uid"] == "new-uid"
    assert gc.deleted == {}


async def test_terminated_pods_beyond_a_lowered_threshold_are_deleted_without_a_status_write(
    api: FakeApi,
) -> None:
    clock = FakeClock()
    api.pods = {
        name: pod(name, "n1", "Succeeded", creationTimestamp=f"2024-01-01T00:00:0{i}Z")
        for i, name in enumerate(["first", "second", "third"])
    }
    gc = PodGC(lambda: api, clock, threshold=1)  # type: ignore[arg-type, return-value]
    await gc_pass(gc, api)
    assert api.deleted() == ["first", "second"]
    assert [m for m, _, _ in api.writes] == ["DELETE", "DELETE"]
    assert gc.deleted == {"terminated": 2}


async def test_a_pass_reads_the_watched_caches_and_lists_nothing(api: FakeApi) -> None:
    """`loop` lists pods and Nodes once, then keeps them from the watches: a Node's deletion
    reaches the cache as a watch event, and the passes that follow make no LIST."""
    clock = FakeClock()
    api.pods = {"w": pod("w", "n1")}
    gc = PodGC(lambda: api, clock)  # type: ignore[arg-type, return-value]
    task = asyncio.ensure_future(gc.loop())
    try:
        for _ in range(100):
            if gc.passes:
                break
            await asyncio.sleep(0)
        assert gc.passes == 1 and sorted(api.lists) == ["/api/v1/nodes", "/api/v1/pods"]
        assert set(gc.nodes) == {"n1", "n2"} and set(gc.pods) == {("ns", "w")}
        gone = api.nodes.pop("n1")
        await api.streams["/api/v1/nodes"].put({"type": "DELETED", "object": gone})
        for _ in range(100):
            if "n1" not in gc.nodes:
                break
            await asyncio.sleep(0)
        await passes(gc, clock, 20)  # t=20: seen missing from the cache
        await passes(gc, clock, 20)
        await passes(gc, clock, 20)  # t=60: the live GET finds no node
        assert api.deleted() == ["w"]
        assert sorted(api.lists) == ["/api/v1/nodes", "/api/v1/pods"]  # four passes, no LIST
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
