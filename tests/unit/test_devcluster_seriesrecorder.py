"""kube-scheduler's events.k8s.io/v1 recorder (devcluster/kubelet/seriesrecorder.py) against a fake
API, as client-go's tools/events library records: makeEvent's body, isomorphic repeats folded
into a series (the first repeat patched at once, later ones counted), the series written again
every 30 minutes and a last time once it has not been seen for 6 minutes, then forgotten — on the
injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fakeapi import RecordingApi

from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet.podevents import PodEvent
from kubetrain.devcluster.kubelet.seriesrecorder import SeriesCache, SeriesRecorder
from kubetrain.kube.clock import FakeClock

Obj = dict[str, Any]
POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
}
FAILED = PodEvent("Warning", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
PATH = "/apis/events.k8s.io/v1/namespaces/ns/events"


@pytest.fixture
async def running() -> AsyncIterator[tuple[SeriesRecorder, RecordingApi, FakeClock]]:
    api, clock = RecordingApi(), FakeClock()
    fake: Any = api
    raw: RawApi = fake
    rec = SeriesRecorder(lambda: raw, clock, "default-scheduler", hostname="cp-0")
    task = asyncio.ensure_future(rec.run())
    yield rec, api, clock
    task.cancel()


async def test_an_event_is_created_once_and_its_first_repeat_patches_a_series(
    running: tuple[SeriesRecorder, RecordingApi, FakeClock],
) -> None:
    rec, api, clock = running
    rec.record(POD, FAILED, action="Scheduling")
    await asyncio.wait_for(rec.flush(), 5)
    [(method, path, body)] = api.requests
    assert (method, path) == ("POST", PATH)
    name = body["metadata"]["name"]
    assert name.startswith("p.") and body["metadata"]["namespace"] == "ns"
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": body["metadata"],
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-cp-0",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": "ns",
            "name": "p",
            "uid": "u-1",
            "resourceVersion": "7",
        },
        "note": FAILED.message,
        "type": "Warning",
    }

    await clock.advance(10)
    other_note = PodEvent("Warning", "FailedScheduling", "0/1 nodes are available: 1 Insufficient memory.")
    rec.record(POD, other_note, action="Scheduling")  # the note is not part of the key
    await asyncio.wait_for(rec.flush(), 5)
    series = {"count": 2, "lastObservedTime": "2024-01-01T00:00:10.000000Z"}
    assert api.requests[1] == ("PATCH", f"{PATH}/{name}", {"series": series})

    await clock.advance(10)
    rec.record(POD, FAILED, action="Scheduling")  # counted only
    await asyncio.wait_for(rec.flush(), 5)
    assert len(api.requests) == 2
    # the pod at another resourceVersion is another object reference: another Event
    rec.record({**POD, "metadata": {**POD["metadata"], "resourceVersion": "8"}}, FAILED, action="Scheduling")
    await asyncio.wait_for(rec.flush(), 5)
    assert api.requests[2][0] == "POST" and api.requests[2][2]["regarding"]["resourceVersion"] == "8"


async def test_a_series_is_written_again_every_30_minutes_and_last_when_6_minutes_quiet(
    running: tuple[SeriesRecorder, RecordingApi, FakeClock],
) -> None:
    rec, api, clock = running
    for _ in range(3):
        rec.record(POD, FAILED, action="Scheduling")
    await asyncio.wait_for(rec.flush(), 5)
    name = api.requests[0][2]["metadata"]["name"]
    assert [m for m, _, _ in api.requests] == ["POST", "PATCH"]
    for _ in range(1, 30):  # a repeat every minute: the series lives on, counted in the cache
        await clock.advance(60)
        rec.record(POD, FAILED, action="Scheduling")
    assert len(api.requests) == 2
    await clock.advance(60)  # 30 minutes: the refresh writes the count so far
    assert api.requests[2] == (
        "PATCH",
        f"{PATH}/{name}",
        {"series": {"count": 32, "lastObservedTime": "2024-01-01T00:29:00.000000Z"}},
    )
    # quiet from now on: at the first 6-minute tick 6 minutes after the last one, a last write
    api.gone.add(name)  # expired meanwhile: created again under its name, with its series
    await clock.advance(6 * 60)
    await clock.advance(6 * 60)
    method, path, body = api.requests[-1]
    assert (method, path) == ("POST", PATH)
    assert body["metadata"]["name"] == name and body["series"]["count"] == 32
    assert len(rec.series) == 0
    await clock.advance(60 * 60)
    assert api.requests[-1] == (method, path, body)  # forgotten: nothing more


def test_a_singleton_is_forgotten_6_minutes_after_it_happened_without_a_write() -> None:
    cache = SeriesCache()
    start = datetime(2024, 1, 1, tzinfo=UTC)
    event = {"type": "Normal", "reason": "Scheduled", "eventTime": "2024-01-01T00:00:00.000000Z"}
    assert cache.observe(dict(event), start) == event
    assert cache.finish(start + timedelta(minutes=6)) == [] and len(cache) == 1
    assert cache.finish(start + timedelta(minutes=6, seconds=1)) == [] and len(cache) == 0
    assert cache.refresh() == []
