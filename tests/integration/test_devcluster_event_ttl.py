"""Events expire as with kube-apiserver's --event-ttl: deleted `event_ttl` after their last write
(create, update or patch), seen by watchers as DELETED, gone from GET and LIST. The API server's
clock is injected; expiry runs when `event_expiry.sweep()` does (the server's own sweep every
0.5 s is on the real clock, far from the fake clock's hour)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock

TTL = 3600.0
CORE = "/api/v1/namespaces/default/events"
EVENTS_K8S_IO = "/apis/events.k8s.io/v1/namespaces/default/events"


@pytest.fixture
def devcluster_options(wall: FakeClock) -> dict[str, Any]:
    return {"clock": wall.now, "event_ttl": TTL}


def core_event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "worker-0"},
        "reason": "Started",
        "message": "Started container",
        "type": "Normal",
        "source": {"component": "kubelet"},
        "count": 1,
    }


def new_event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "worker-0"},
        "reason": "Started",
        "note": "Started container",
        "type": "Normal",
        "action": "Start",
        "reportingController": "kubelet",
        "reportingInstance": "node-0",
    }


async def create(raw: RawApi, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, created = await raw.request("POST", path, body=body)
    assert code == 201, created
    return dict(created)


async def names(raw: RawApi, path: str) -> list[str]:
    code, body = await raw.request("GET", path)
    assert code == 200, body
    return [item["metadata"]["name"] for item in body["items"]]


async def expire_after(devcluster: DevCluster, wall: FakeClock, seconds: float) -> int:
    await wall.advance(seconds)
    return devcluster.event_expiry.sweep()


@pytest.fixture
async def watch(raw: RawApi) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
    """Core/v1 Event watch events as they arrive, from the current resourceVersion."""
    code, listed = await raw.request("GET", CORE)
    assert code == 200, listed
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def read() -> None:
        query = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"]}
        async for event in raw.stream(CORE, query):
            await queue.put(event)

    task = asyncio.create_task(read())
    yield queue
    task.cancel()


async def next_event(queue: asyncio.Queue[dict[str, Any]]) -> dict[str, Any]:
    return await asyncio.wait_for(queue.get(), 10)


async def test_an_event_is_deleted_ttl_after_it_was_created_and_watchers_see_deleted(
    devcluster: DevCluster, raw: RawApi, wall: FakeClock, watch: asyncio.Queue[dict[str, Any]]
) -> None:
    created = await create(raw, CORE, core_event("worker-0.started"))
    assert (await next_event(watch))["type"] == "ADDED"

    assert await expire_after(devcluster, wall, TTL - 1) == 0
    assert await names(raw, CORE) == ["worker-0.started"]

    assert await expire_after(devcluster, wall, 1) == 1
    deleted = await next_event(watch)
    assert deleted["type"] == "DELETED"
    assert deleted["object"]["metadata"]["name"] == "worker-0.started"
    assert deleted["object"]["reason"] == "Started"  # the last stored Event, at a new version
    assert int(deleted["object"]["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert await names(raw, CORE) == []
    code, _ = await raw.request("GET", f"{CORE}/worker-0.started")
    assert code == 404
    assert len(devcluster.event_expiry) == 0


async def test_an_update_or_patch_starts_the_ttl_again(
    devcluster: DevCluster, raw: RawApi, api: client.ApiClient, wall: FakeClock
) -> None:
    await create(raw, CORE, core_event("worker-0.backoff"))
    await wall.advance(TTL / 2)
    patched = await client.CoreV1Api(api).patch_namespaced_event("worker-0.backoff", "default", {"count": 2})
    assert patched.count == 2
    # An hour after the create, but only half an hour after the patch: still there.
    assert await expire_after(devcluster, wall, TTL / 2) == 0
    assert await names(raw, CORE) == ["worker-0.backoff"]

    code, current = await raw.request("GET", f"{CORE}/worker-0.backoff")
    assert code == 200, current
    code, body = await raw.request("PUT", f"{CORE}/worker-0.backoff", body={**current, "count": 3})
    assert code == 200, body
    assert await expire_after(devcluster, wall, TTL - 1) == 0  # an hour after the PUT, less a second
    assert await names(raw, CORE) == ["worker-0.backoff"]
    assert await expire_after(devcluster, wall, 1) == 1
    assert await names(raw, CORE) == []


async def test_an_update_that_changes_nothing_does_not_extend_the_ttl(
    devcluster: DevCluster, raw: RawApi, wall: FakeClock
) -> None:
    created = await create(raw, CORE, core_event("worker-0.pulled"))
    await wall.advance(TTL / 2)
    code, same = await raw.request("PUT", f"{CORE}/worker-0.pulled", body=created)
    assert code == 200, same
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # not written
    assert await expire_after(devcluster, wall, TTL / 2) == 1


async def test_events_k8s_io_events_expire_like_core_events_seen_through_both_groups(
    devcluster: DevCluster, raw: RawApi, wall: FakeClock
) -> None:
    await create(raw, EVENTS_K8S_IO, new_event("worker-0.pulled"))
    await wall.advance(60)
    await create(raw, CORE, core_event("worker-0.started"))
    assert (
        await names(raw, CORE) == await names(raw, EVENTS_K8S_IO) == ["worker-0.pulled", "worker-0.started"]
    )

    assert await expire_after(devcluster, wall, TTL - 60) == 1
    # the one left was written a minute later, and is one Event through both groups
    assert await names(raw, CORE) == await names(raw, EVENTS_K8S_IO) == ["worker-0.started"]
    assert await expire_after(devcluster, wall, 60) == 1
    assert await names(raw, CORE) == await names(raw, EVENTS_K8S_IO) == []


async def test_an_event_deleted_before_its_ttl_leaves_nothing_to_expire(
    devcluster: DevCluster, raw: RawApi, wall: FakeClock
) -> None:
    await create(raw, CORE, core_event("worker-0.killing"))
    code, body = await raw.request("DELETE", f"{CORE}/worker-0.killing")
    assert code == 200, body
    assert len(devcluster.event_expiry) == 0
    # Re-created under the same name: its TTL starts from the new create.
    await wall.advance(TTL / 2)
    await create(raw, CORE, core_event("worker-0.killing"))
    assert await expire_after(devcluster, wall, TTL / 2) == 0
    assert await names(raw, CORE) == ["worker-0.killing"]


async def test_other_kinds_never_expire(devcluster: DevCluster, raw: RawApi, wall: FakeClock) -> None:
    await create(
        raw,
        "/api/v1/namespaces/default/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}},
    )
    assert await expire_after(devcluster, wall, 10 * TTL) == 0
    assert devcluster.get_object("configmaps", "default", "settings") is not None
