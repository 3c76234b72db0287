"""The pod simulator's per-pod locks and timers (kubetrain.devcluster.kubelet.scheduling.PodTimers):
work on one pod is serialised, and nothing is kept for a pod once its work is done."""

from __future__ import annotations

import asyncio

from kubetrain.devcluster.kubelet.scheduling import PodTimers
from kubetrain.kube.clock import FakeClock

KEY = ("default", "worker-0")


def timers(clock: FakeClock, uids: dict[tuple[str, str], str]) -> PodTimers:
    return PodTimers(clock, uids.get)


async def test_a_pod_lock_serialises_and_is_dropped_by_its_last_user() -> None:
    t = timers(FakeClock(), {})
    order: list[str] = []
    release = asyncio.Event()

    async def first() -> None:
        async with t.lock(KEY):
            order.append("first in")
            await release.wait()
            order.append("first out")

    async def second() -> None:
        async with t.lock(KEY):
            order.append("second in")

    a = asyncio.create_task(first())
    await asyncio.sleep(0)
    b = asyncio.create_task(second())
    await asyncio.sleep(0)
    assert t.tracked() == 1 and order == ["first in"]  # the second waits on the same lock
    release.set()
    await asyncio.gather(a, b)
    assert order == ["first in", "first out", "second in"]
    assert t.tracked() == 0


async def test_a_cancelled_waiter_leaves_no_lock_behind() -> None:
    t = timers(FakeClock(), {})
    release = asyncio.Event()

    async def holder() -> None:
        async with t.lock(KEY):
            await release.wait()

    async def waiter() -> None:
        async with t.lock(KEY):
            raise AssertionError("a cancelled waiter never runs")

    h = asyncio.create_task(holder())
    await asyncio.sleep(0)
    w = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    w.cancel()
    await asyncio.gather(w, return_exceptions=True)
    release.set()
    await h
    assert t.tracked() == 0


async def test_a_fired_timer_leaves_nothing_for_its_pod() -> None:
    clock = FakeClock()
    uids = {KEY: "uid-1"}
    t = timers(clock, uids)
    fired: list[tuple[str, str]] = []

    async def action(key: tuple[str, str]) -> None:
        fired.append(key)

    t.schedule(KEY, ("start", "uid-1"), 5, action)
    assert t.tracked() == 1
    await clock.advance(5)
    assert fired == [KEY]
    assert t.tracked() == 0
