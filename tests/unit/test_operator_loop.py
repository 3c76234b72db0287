"""operator/loop.py: the reconcile loop both controllers run — a failed reconcile is retried with
back-off and never ends its worker; stop ends the workers and stops the informers."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kubetrain.kube.client import ApiError
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator.loop import ReconcileLoop


class _Recorder:
    def __init__(self) -> None:
        self.flushed = 0

    async def flush(self) -> None:
        self.flushed += 1


class _Informer:
    def __init__(self) -> None:
        self.stopped = False

    async def stop(self) -> None:
        self.stopped = True


class Loop(ReconcileLoop):
    log = logging.getLogger("test.loop")
    subject = "thing "

    def __init__(self, clock: FakeClock, failures: list[BaseException]) -> None:
        self.queue = WorkQueue(name="test-loop", clock=clock)
        self.informers: list[Any] = [_Informer()]
        self.recorder: Any = _Recorder()
        self._workers = []
        self.failures = failures
        self.calls: list[str] = []
        self.done = asyncio.Event()

    async def reconcile(self, key: str) -> None:
        self.calls.append(key)
        if self.failures:
            raise self.failures.pop(0)
        self.done.set()


async def _until(pred: Any, clock: FakeClock) -> None:
    for _ in range(200):
        if pred():
            return
        await clock.advance(1.0)
    raise AssertionError("condition not reached")


async def test_failed_reconciles_are_retried_with_back_off_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    loop = Loop(clock, [ApiError(409, "Conflict", "stale"), RuntimeError("bug")])
    loop.start_workers(2, "test worker")
    caplog.set_level(logging.INFO, logger="test.loop")
    loop.queue.add("ns/a")
    await _until(loop.done.is_set, clock)
    assert loop.calls == ["ns/a"] * 3
    assert loop.queue.num_requeues("ns/a") == 0  # the success reset the key's back-off
    lines = [(r.levelno, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert lines == [
        (logging.INFO, "reconcile thing ns/a: 409 Conflict: stale (retrying)", False),
        (logging.ERROR, "reconcile thing ns/a failed (retrying)", True),
    ]
    assert all(not t.done() for t in loop._workers)  # neither failure ended a worker
    await loop.stop_loop()


async def test_stop_ends_the_workers_and_stops_the_informers() -> None:
    loop = Loop(FakeClock(), [])
    loop.start_workers(3, "test worker")
    workers = list(loop._workers)
    informer = loop.informers[0]
    assert [t.get_name() for t in workers] == ["test worker 0", "test worker 1", "test worker 2"]
    await loop.stop_loop()
    assert all(t.done() for t in workers) and loop._workers == []
    assert informer.stopped and loop.informers == [] and loop.recorder.flushed == 1
    loop.queue.add("ns/b")  # a shut queue takes no more keys
    assert len(loop.queue) == 0
