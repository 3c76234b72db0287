"""The simulated components' event recorder (devcluster/kubelet/recorder.py) against a fake API:
client-go's correlation (a repeat patches the Event it wrote; similar ones are combined; the
spam filter's budget per pod and type, its skipped repeats still counted), the client's rate
limit on the injected clock, and the bounded queue."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fakeapi import RecordingApi

from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet.podevents import PodEvent
from kubetrain.devcluster.kubelet.recorder import Activity, Recorder
from kubetrain.kube.clock import FakeClock

Obj = dict[str, Any]
POD: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"}}
BACK_OFF = PodEvent(
    "Warning", "BackOff", "Back-off restarting failed container main", "spec.containers{main}"
)


def recorder(api: RecordingApi, clock: FakeClock, **kwargs: Any) -> Recorder:
    fake: Any = api
    raw: RawApi = fake
    return Recorder(lambda: raw, clock, "kubelet", host="n0", **kwargs)


async def written(rec: Recorder, *events: PodEvent) -> None:
    writer = asyncio.ensure_future(rec.run())
    try:
        for event in events:
            rec.record(POD, event)
        await asyncio.wait_for(rec.flush(), 5)
    finally:
        writer.cancel()


async def test_a_repeat_patches_count_and_last_timestamp_of_the_event_it_wrote() -> None:
    api, clock = RecordingApi(), FakeClock()
    rec = recorder(api, clock)
    await written(rec, BACK_OFF)
    [(method, path, body)] = api.requests
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/events")
    assert body["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns",
        "name": "p",
        "uid": "u-1",
        "fieldPath": "spec.containers{main}",
    }
    assert body["source"] == {"component": "kubelet", "host": "n0"}
    assert (body["reportingComponent"], body["reportingInstance"], body["count"]) == ("kubelet", "n0", 1)
    name = body["metadata"]["name"]
    assert name.startswith("p.")
    await clock.advance(30)
    await written(rec, BACK_OFF)
    assert api.requests[1] == (
        "PATCH",
        f"/api/v1/namespaces/ns/events/{name}",
        {"count": 2, "lastTimestamp": "2024-01-01T00:00:30Z", "message": BACK_OFF.message},
    )
    # The same reason about another container is another Event.
    await written(rec, PodEvent("Warning", "BackOff", BACK_OFF.message, "spec.containers{side}"))
    assert api.requests[2][0] == "POST"


async def test_an_event_that_expired_is_created_again_under_its_name_and_count() -> None:
    api, clock = RecordingApi(), FakeClock()
    rec = recorder(api, clock)
    await written(rec, BACK_OFF)
    name = api.requests[0][2]["metadata"]["name"]
    api.gone.add(name)
    await written(rec, BACK_OFF)
    method, _, body = api.requests[2]
    assert (method, body["metadata"]["name"], body["count"]) == ("POST", name, 2)
    assert body["firstTimestamp"] == api.requests[0][2]["firstTimestamp"]


async def test_the_tenth_similar_message_is_combined_and_the_next_ones_update_it() -> None:
    api, clock = RecordingApi(), FakeClock()
    rec = recorder(api, clock)
    events = [PodEvent("Warning", "Failed", f'Error: configmap "c{i}" not found') for i in range(11)]
    await written(rec, *events)
    methods = [m for m, _, _ in api.requests]
    assert methods == ["POST"] * 10 + ["PATCH"]
    combined = api.requests[9][2]
    assert combined["message"] == '(combined from similar events): Error: configmap "c9" not found'
    assert api.requests[10][2] == {
        "count": 2,
        "lastTimestamp": "2024-01-01T00:00:00Z",
        "message": '(combined from similar events): Error: configmap "c10" not found',
    }
    assert api.requests[10][1].endswith("/" + combined["metadata"]["name"])


async def test_the_spam_filter_allows_25_writes_per_pod_and_type_and_counts_the_skipped() -> None:
    api, clock = RecordingApi(), FakeClock()
    rec = recorder(api, clock)
    await written(rec, *[BACK_OFF] * 30)
    assert len(api.requests) == 25  # 1 create + 24 patches; 5 skipped
    assert api.requests[-1][2]["count"] == 25
    await written(rec, PodEvent("Normal", "Started", "Container started", "spec.containers{main}"))
    assert len(api.requests) == 26  # a Normal one has its own budget
    await clock.advance(300)  # one token back
    await written(rec, BACK_OFF)
    assert api.requests[-1][2]["count"] == 31  # the skipped ones counted


async def test_writes_wait_for_the_client_rate_limit_on_the_clock() -> None:
    api, clock = RecordingApi(), FakeClock()
    rec = recorder(api, clock, qps=1.0, burst=2, correlate=False)
    writer = asyncio.ensure_future(rec.run())
    try:
        for _ in range(3):
            rec.record(POD, BACK_OFF)
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(api.requests) == 2  # the burst; the third waits for a token
        await clock.advance(1)
        await asyncio.wait_for(rec.flush(), 5)
        assert [m for m, _, _ in api.requests] == ["POST"] * 3  # not correlated: each one created
    finally:
        writer.cancel()


async def test_a_full_queue_drops_the_event_and_counts_it() -> None:
    api, clock = RecordingApi(), FakeClock()
    rec = recorder(api, clock, max_queued=2)
    for _ in range(3):
        rec.record(POD, BACK_OFF)
    assert rec.dropped == 1
    await written(rec)
    assert [m for m, _, _ in api.requests] == ["POST", "PATCH"]


def test_bad_settings_are_refused_with_what_is_valid() -> None:
    with pytest.raises(ValueError, match="qps must be > 0, burst and max_queued >= 1"):
        recorder(RecordingApi(), FakeClock(), qps=0)


async def test_writes_wait_for_a_pause_in_the_simulators_pod_work() -> None:
    api, clock = RecordingApi(), FakeClock()
    activity = Activity()
    rec = recorder(api, clock, activity=activity)
    writer = asyncio.ensure_future(rec.run())
    try:
        with activity.working():  # a pod's reconcile in flight
            rec.record(POD, BACK_OFF)
            for _ in range(50):
                await asyncio.sleep(0)
            assert api.requests == []  # the pod's step first
        await asyncio.wait_for(rec.flush(), 5)  # then, after a pause, the Event
        assert [m for m, _, _ in api.requests] == ["POST"]
        assert api.requests[0][2]["firstTimestamp"] == "2024-01-01T00:00:00Z"  # when it happened
    finally:
        writer.cancel()
