"""The bound on an EventRecorder's pending Event writes (kubetrain/kube/events.py), as client-go's
broadcaster queue (maxQueuedEvents 1000, DropIfChannelFull): against an API server that does not
answer, at most 1000 writes wait, the next Event is dropped and counted, a warning is logged once
a minute at most, per-pod (budgeted) Events leave half of the room to the others, and writing
resumes when the server answers. A fake clock, no real sleeps."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import pytest

from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.events import DROP_LOG_INTERVAL, MAX_PENDING, EventRecorder
from kubetrain.kube.resources import EVENTS, ResourceRef
from kubetrain.serving.metrics import REGISTRY

Obj = dict[str, Any]


def job(i: int) -> Obj:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": f"j{i}", "namespace": "ns", "uid": f"u-{i}", "resourceVersion": "1"},
    }


class StalledApi:
    """Creates Events only once `answer` is set: until then every request hangs, as against an
    API server that accepts connections but does not answer."""

    def __init__(self) -> None:
        self.answer = asyncio.Event()
        self.waiting = 0
        self.created: list[Obj] = []

    async def create(self, ref: ResourceRef, obj: Obj, namespace: str | None = None) -> Obj:
        assert ref == EVENTS
        self.waiting += 1
        try:
            await self.answer.wait()
        finally:
            self.waiting -= 1
        self.created.append(obj)
        return obj


def dropped() -> float:
    return REGISTRY.get_sample_value("kubetrain_events_dropped_total", {"reason": "queue_full"}) or 0.0


def recorder(api: StalledApi, clock: FakeClock, **kwargs: Any) -> EventRecorder:
    return EventRecorder(cast(KubeClient, api), host="h", clock=clock, **kwargs)


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_the_1001st_pending_event_is_dropped_and_counted_and_writes_resume() -> None:
    api, clock = StalledApi(), FakeClock()
    rec = recorder(api, clock)
    before = dropped()
    for i in range(MAX_PENDING + 500):
        rec.emit(job(i), "Warning", "FailedCreatePod", f"could not create pod {i}")
    await settle()
    assert rec.pending == MAX_PENDING == 1000
    assert api.waiting == 1000  # the first 1000 are in flight, nothing more is held
    assert dropped() - before == 500
    api.answer.set()
    await rec.flush()
    assert rec.pending == 0
    assert [e["message"] for e in api.created] == [f"could not create pod {i}" for i in range(1000)]
    rec.emit(job(5000), "Normal", "JobSucceeded", "done")  # room again
    await rec.flush()
    assert api.created[-1]["reason"] == "JobSucceeded"
    assert dropped() - before == 500


async def test_per_pod_events_leave_half_of_the_room_to_a_jobs_own_events() -> None:
    api, clock = StalledApi(), FakeClock()
    rec = recorder(api, clock, max_pending=10)
    before = dropped()
    for i in range(8):  # one per job: each within its object's budget
        rec.emit(job(i), "Normal", "SuccessfulCreatePod", f"Created pod: j{i}-worker-0", budgeted=True)
    assert rec.pending == 5
    assert dropped() - before == 3
    for i in range(6):
        rec.emit(job(i), "Warning", "JobFailed", f"job j{i} failed")
    assert rec.pending == 10
    assert dropped() - before == 4  # the 6th transition found the bound full
    api.answer.set()
    await rec.flush()
    reasons = [e["reason"] for e in api.created]
    assert reasons.count("SuccessfulCreatePod") == 5
    assert reasons.count("JobFailed") == 5


async def test_drops_are_logged_once_a_minute_with_how_many(caplog: pytest.LogCaptureFixture) -> None:
    api, clock = StalledApi(), FakeClock()
    rec = recorder(api, clock, max_pending=2)
    caplog.set_level(logging.WARNING, logger="kubetrain.kube.events")
    for i in range(50):
        rec.emit(job(i), "Normal", "Created", f"m{i}")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert lines[0].startswith("1 event(s) dropped: 2 Event writes pending, at most 2")
    assert "Normal Created on PyTorchJob ns/j2" in lines[0]
    await clock.advance(DROP_LOG_INTERVAL - 1)
    rec.emit(job(99), "Normal", "Created", "m99")
    assert len(caplog.records) == 1
    await clock.advance(1)
    rec.emit(job(100), "Normal", "Created", "m100")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[1].startswith("49 event(s) dropped")  # 47 + m99 + m100 since the first line
    api.answer.set()
    await rec.flush()


async def test_an_event_dropped_for_the_bound_takes_nothing_from_its_objects_budget() -> None:
    api, clock = StalledApi(), FakeClock()
    rec = recorder(api, clock, max_pending=2)
    for i in range(40):  # one is pending (half the bound, for per-pod events), 39 dropped
        rec.emit(job(0), "Normal", f"Reason{i}", "m", budgeted=True)
    api.answer.set()
    await rec.flush()
    assert len(api.created) == 1
    for i in range(25):  # the 24 writes left of the object's 25; the 39 dropped took none
        rec.emit(job(0), "Normal", f"Later{i}", "m", budgeted=True)
        await rec.flush()
    assert [e["reason"] for e in api.created] == ["Reason0"] + [f"Later{i}" for i in range(24)]


def test_a_bound_below_2_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="max_pending must be an integer >= 2, not 1"):
        EventRecorder(cast(KubeClient, StalledApi()), host="h", max_pending=1)
