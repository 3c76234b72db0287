"""Clocks for the kube layer: the real one, and a fake one tests drive by hand.

Everything in `kubetrain.kube` that waits or measures time (work-queue delays and back-off,
the client rate limiter, expectation expiry, leader election) takes a `Clock`, so tests never
sleep real time:

    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("ns/job", 30)
    await clock.advance(30)          # the key is now ready; no real time passed

`monotonic()` measures intervals; `now()` is the wall clock (timezone-aware UTC) used for
absolute deadlines such as `WorkQueue.add_at(key, when)` and Lease timestamps.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (only differences are meaningful)."""
        ...

    def now(self) -> datetime:
        """The current wall-clock time, timezone-aware UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` on this clock (cancellable)."""
        ...


class SystemClock:
    """The real clock: `time.monotonic`, `datetime.now(UTC)` and `asyncio.sleep`."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()


class FakeClock:
    """A manually advanced clock. `sleep()` returns only when `advance()` passes its deadline.

    `start` is the initial wall-clock time (default 2024-01-01T00:00:00Z); `monotonic()` starts
    at 0 and both move together on `advance`.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start if start is not None else datetime(2024, 1, 1, tzinfo=UTC)
        self._elapsed = 0.0
        self._seq = itertools.count()
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    def monotonic(self) -> float:
        return self._elapsed

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._elapsed)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._elapsed + seconds, next(self._seq), fut))
        await fut

    @property
    def sleepers(self) -> int:
        """How many `sleep()` calls are waiting (cancelled ones excluded)."""
        return sum(1 for _, _, fut in self._sleepers if not fut.done())

    def next_deadline(self) -> float | None:
        """The monotonic time of the earliest pending `sleep()`, if any."""
        for deadline, _, fut in sorted(self._sleepers):
            if not fut.done():
                return deadline
        return None

    async def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, waking every sleeper whose deadline has passed, in
        deadline order, and let woken tasks run before returning."""
        target = self._elapsed + max(0.0, seconds)
        await self._settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, fut = heapq.heappop(self._sleepers)
            if fut.done():
                continue
            self._elapsed = max(self._elapsed, deadline)
            fut.set_result(None)
            await self._settle()
        self._elapsed = target
        await self._settle()

    @staticmethod
    async def _settle() -> None:
        # A handful of loop iterations lets woken tasks run up to their next await.
        for _ in range(10):
            await asyncio.sleep(0)
