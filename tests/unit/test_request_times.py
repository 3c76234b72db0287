"""Where a reconcile's API requests spend their time (kubetrain.kube.requesttimes): wall-clock
unions of the limiter waits and the requests in flight, recorded by the transport only inside a
`recording()` (and its tasks), never for an Event sent in the background."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubetrain.devcluster import DevCluster
from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.ratelimit import TokenBucket
from kubetrain.kube.requesttimes import RequestTimes, current, union_length
from kubetrain.kube.resources import CONFIG_MAPS


def test_union_counts_overlaps_once() -> None:
    assert union_length([]) == 0.0
    assert union_length([(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)]) == pytest.approx(3.0)
    assert union_length([(0.0, 4.0), (1.0, 2.0)]) == pytest.approx(4.0)  # nested
    assert union_length([(2.0, 3.0), (0.0, 1.0)]) == pytest.approx(2.0)  # any order


def test_limiter_wait_and_flight_never_overlap() -> None:
    times = RequestTimes()
    times.waited(0.0, 2.0)  # one request waits for a token from 0 to 2
    times.flew(1.0, 3.0)  # another is in flight from 1 to 3: its 1..2 counts as the limiter's
    times.flew(5.0, 6.0)
    assert times.limiter_seconds() == pytest.approx(2.0)
    assert times.api_seconds() == pytest.approx(2.0)  # 2..3 and 5..6


def test_nothing_is_recorded_after_the_recording_ends() -> None:
    with RequestTimes.recording() as times:
        assert current() is times
        times.flew(0.0, 1.0)
    assert current() is None
    times.flew(1.0, 5.0)  # a task started inside that outlived it
    times.waited(1.0, 5.0)
    assert times.api_seconds() == pytest.approx(1.0) and times.limiter_seconds() == 0.0


@pytest.fixture
async def kube(devcluster: DevCluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(devcluster.kubeconfig_path, qps=0) as client:
        yield client


def config_map(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


async def test_requests_record_limiter_waits_and_flights_in_their_recording(kube: KubeClient) -> None:
    clock = FakeClock()
    kube.limiter = TokenBucket(qps=1, burst=2, clock=clock)  # the third request waits 1 s
    await kube.create(CONFIG_MAPS, config_map("outside"), namespace="default")  # not recorded
    with RequestTimes.recording() as times:
        sent = asyncio.gather(
            kube.create(CONFIG_MAPS, config_map("a"), namespace="default"),  # tasks inherit it
            kube.create(CONFIG_MAPS, config_map("b"), namespace="default"),
        )
        await clock.advance(1)  # lets both start (one waits for its token), then gives it one
        await sent
    assert len(times.flights) == 2
    assert len(times.waits) >= 1
    assert times.limiter_seconds() > 0 and times.api_seconds() > 0


async def test_events_sent_in_the_background_are_not_the_reconciles(kube: KubeClient) -> None:
    recorder = EventRecorder(kube)
    cm = await kube.create(CONFIG_MAPS, config_map("evented"), namespace="default")
    with RequestTimes.recording() as times:
        recorder.emit(cm, "Normal", "Tested", "an event")
        await recorder.flush()
    events = await kube.request("list", "GET", "/api/v1/namespaces/default/events")
    assert [e["reason"] for e in events["items"]] == ["Tested"]
    assert times.flights == [] and times.waits == []
