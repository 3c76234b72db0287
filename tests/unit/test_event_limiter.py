"""The Event recorder's own token bucket (kubetrain/kube/transport.py `event_limiter`): an Event
write takes no token from the client's requests (the pod creates) and they take none from it,
and the Event bucket bounds Events at the client's `qps`/`burst` — as controller-runtime's
recorder has its own REST client and client-go rate limiter. Against devcluster over HTTP, with
an injected clock for both buckets: a request waiting for a token sleeps on the fake clock, so
the clock's sleepers are the requests held by a limiter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubetrain.devcluster import DevCluster
from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.resources import CONFIG_MAPS, EVENTS

WITHIN = 10.0  # real seconds for an HTTP round trip to the in-process devcluster


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def reader(devcluster: DevCluster) -> AsyncIterator[KubeClient]:
    """An unlimited client, to look at what was written."""
    async with await KubeClient.connect(devcluster.kubeconfig_path, qps=0) as base:
        yield base


@pytest.fixture
def client(reader: KubeClient, clock: FakeClock) -> KubeClient:
    """A client limited to 1 request/s with a burst of 2, on the reader's connection pool."""
    return KubeClient(reader.api_client, qps=1, burst=2, clock=clock)


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


async def create(client: KubeClient, name: str) -> asyncio.Task[dict[str, Any]]:
    return asyncio.create_task(client.create(CONFIG_MAPS, config_map(name), namespace="default"))


async def held(clock: FakeClock, n: int) -> None:
    """Wait (real time, bounded) until exactly `n` requests wait for a token."""
    async with asyncio.timeout(WITHIN):
        while clock.sleepers != n:  # noqa: ASYNC110 - the HTTP round trips are real, the sleeps fake
            await asyncio.sleep(0.01)


async def reasons(reader: KubeClient) -> list[str]:
    items = (await reader.list(EVENTS, "default"))["items"]
    return sorted(e["reason"] for e in items)


async def test_the_event_bucket_has_the_clients_rate_and_burst(client: KubeClient) -> None:
    assert (client.event_limiter.qps, client.event_limiter.burst) == (1.0, 2)
    assert client.event_limiter is not client.limiter


async def test_event_writes_take_no_token_from_the_pod_creates(
    client: KubeClient, reader: KubeClient, clock: FakeClock
) -> None:
    recorder = EventRecorder(client, host="h", clock=clock)
    subject = config_map("subject") | {"metadata": {"name": "subject", "namespace": "default", "uid": "u1"}}
    recorder.emit(subject, "Normal", "First", "one")
    recorder.emit(subject, "Normal", "Second", "two")
    await asyncio.wait_for(recorder.flush(), WITHIN)  # the Event bucket's burst: no wait
    # Both of the client's tokens are still there: two creates go at once, the third waits 1 s.
    first, second = await create(client, "a"), await create(client, "b")
    await asyncio.wait_for(asyncio.gather(first, second), WITHIN)
    third = await create(client, "c")
    await held(clock, 1)
    assert not third.done()
    await clock.advance(1)
    await asyncio.wait_for(third, WITHIN)
    assert await reasons(reader) == ["First", "Second"]


async def test_pod_creates_never_delay_events_and_the_event_bucket_limits_them(
    client: KubeClient, reader: KubeClient, clock: FakeClock
) -> None:
    recorder = EventRecorder(client, host="h", clock=clock)
    subject = config_map("subject") | {"metadata": {"name": "subject", "namespace": "default", "uid": "u1"}}
    creates = [await create(client, name) for name in ("a", "b", "c")]  # the third waits for a token
    await asyncio.wait_for(asyncio.gather(*creates[:2]), WITHIN)
    await held(clock, 1)
    recorder.emit(subject, "Normal", "First", "one")
    recorder.emit(subject, "Normal", "Second", "two")
    await asyncio.wait_for(recorder.flush(), WITHIN)  # written while a create waits for its token
    assert await reasons(reader) == ["First", "Second"]
    assert not creates[2].done()
    recorder.emit(subject, "Normal", "Third", "three")  # past the Event bucket's burst: waits 1 s
    await held(clock, 2)
    assert await reasons(reader) == ["First", "Second"]
    await clock.advance(1)
    await asyncio.wait_for(asyncio.gather(recorder.flush(), creates[2]), WITHIN)
    assert await reasons(reader) == ["First", "Second", "Third"]
