"""The node health monitor's passes read watch-fed caches of the Nodes and Leases
(controllers/nodehealth.py), as node_lifecycle_controller.go reads its informers: no LIST."""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.controllers.nodehealth import LEASES, NodeHealthMonitor
from kubetrain.devcluster.sharedwatch import SharedWatch
from kubetrain.kube.clock import FakeClock

Obj = dict[str, Any]
START = datetime(2026, 1, 2, 3, 0, 0, tzinfo=UTC)


class RecordingApi:
    """Records every request as (method, path); a node status PUT succeeds."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    async def request(
        self, method: str, path: str, *, query: Any = None, body: Any = None
    ) -> tuple[int, Any]:
        self.requests.append((method, path))
        if method == "PUT" and path.startswith("/api/v1/nodes/") and path.endswith("/status"):
            return 200, copy.deepcopy(body)
        return 405, {"reason": "MethodNotAllowed"}


def node(name: str) -> Obj:
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-02T03:00:00Z"}
    return {
        "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {"conditions": [ready]},
    }


def lease(name: str, renew: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {"renewTime": renew}}


def stamp(clock: FakeClock) -> str:
    return clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def monitor(api: RecordingApi, clock: FakeClock, **options: Any) -> NodeHealthMonitor:
    health = NodeHealthMonitor(lambda: cast(RawApi, api), clock, SharedWatch("/api/v1/nodes"), **options)
    await health.relist_nodes([node("alive"), node("lost")])
    await health.relist_leases([lease("alive", stamp(clock)), lease("lost", stamp(clock))])
    return health


async def test_passes_read_the_caches_and_make_no_list() -> None:
    api, clock = RecordingApi(), FakeClock(start=START)
    health = await monitor(api, clock)
    assert health.lease_watch.path == LEASES
    await health.check()
    for _ in range(6):  # 60 s: "alive" renews at each heartbeat, "lost" never again
        await clock.advance(10)
        await health.observe_lease("MODIFIED", lease("alive", stamp(clock)))
        await health.check({"alive": stamp(clock)})
    assert health.passes == 7
    assert [m for m, _ in api.requests if m in ("GET", "LIST")] == []  # no read at all
    assert api.requests == [("PUT", "/api/v1/nodes/lost/status")]  # 60 s > 50 s: Unknown


async def test_a_pass_waits_for_the_renewals_just_made() -> None:
    api, clock = RecordingApi(), FakeClock(start=START)
    health = await monitor(api, clock)
    await health.check()
    await clock.advance(50)
    renewed = stamp(clock)
    pass_ = asyncio.ensure_future(health.check({"alive": renewed, "lost": renewed}))
    await asyncio.sleep(0)
    assert not pass_.done()  # the cache does not show the renewals yet
    await health.observe_lease("MODIFIED", lease("alive", renewed))
    await health.observe_lease("MODIFIED", lease("lost", renewed))
    await pass_
    for _ in range(5):  # to 100 s: 50 s since the pass at 50 s saw the renewals
        await clock.advance(10)
        await health.check()
    assert api.requests == []
    await clock.advance(10)  # 110 s: past the grace period counted from the pass at 50 s
    await health.check()
    assert sorted(api.requests) == [
        ("PUT", "/api/v1/nodes/alive/status"),
        ("PUT", "/api/v1/nodes/lost/status"),
    ]


async def test_a_pass_that_never_sees_the_renewals_goes_on_after_its_wait() -> None:
    api, clock = RecordingApi(), FakeClock(start=START)
    health = await monitor(api, clock, catch_up_seconds=0.01)
    await health.check()
    await clock.advance(51)
    await health.check({"alive": stamp(clock)})  # the watch never delivers it
    assert health.passes == 2
    assert sorted(api.requests) == [
        ("PUT", "/api/v1/nodes/alive/status"),
        ("PUT", "/api/v1/nodes/lost/status"),
    ]


async def test_a_deleted_node_leaves_the_cache() -> None:
    api, clock = RecordingApi(), FakeClock(start=START)
    health = await monitor(api, clock)
    await health.check()
    await health.observe_node("DELETED", node("lost"))
    await health.observe_lease("DELETED", lease("lost", stamp(clock)))
    await clock.advance(51)
    await health.check()
    assert api.requests == [("PUT", "/api/v1/nodes/alive/status")]


def test_the_node_watch_must_be_of_every_node() -> None:
    with pytest.raises(ValueError, match="a watch of every Node"):
        NodeHealthMonitor(
            lambda: cast(RawApi, RecordingApi()),
            FakeClock(),
            SharedWatch("/api/v1/namespaces/a/nodes"),
        )


async def test_no_pass_before_both_caches_hold_their_first_list() -> None:
    api, clock = RecordingApi(), FakeClock(start=START)
    health = NodeHealthMonitor(
        lambda: cast(RawApi, api), clock, SharedWatch("/api/v1/nodes"), catch_up_seconds=0.01
    )
    await health.relist_nodes([node("lost")])
    await health.check()
    assert health.passes == 0  # no Lease list yet: no pass (a node's Lease could be unseen)
    await health.relist_leases([])
    await health.check()
    assert health.passes == 1
    assert api.requests == []
