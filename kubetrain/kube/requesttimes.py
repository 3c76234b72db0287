"""Where a unit of work's API requests spent their time: waiting for the client's rate limiter,
or in flight (sent, answer not yet read).

    with RequestTimes.recording() as times:     # around one reconcile
        await apply(...)                        # every request of this task and the tasks it
                                                # starts (asyncio.gather) is recorded here
    times.limiter_seconds(), times.api_seconds()

`Transport.request` records its two intervals into the `RequestTimes` current in its context
(a ContextVar: tasks started inside inherit it; nothing is recorded outside a `recording()`).
Requests of one unit may run concurrently, so each figure is wall-clock time — the length of the
union of the intervals, not their sum — and the two never overlap: `limiter_seconds` is the time
at least one request waited for a token, `api_seconds` the time at least one was in flight while
none waited. A task started inside that outlives the unit records nothing once `recording()`
has ended; one started with `detached()` (an Event sent in the background) records nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import Context, ContextVar, copy_context

Interval = tuple[float, float]


class RequestTimes:
    """The limiter waits and in-flight intervals (time.perf_counter) of one unit's requests."""

    __slots__ = ("closed", "flights", "waits")

    def __init__(self) -> None:
        self.waits: list[Interval] = []
        self.flights: list[Interval] = []
        self.closed = False

    def waited(self, start: float, end: float) -> None:
        if not self.closed and end > start:
            self.waits.append((start, end))

    def flew(self, start: float, end: float) -> None:
        if not self.closed and end > start:
            self.flights.append((start, end))

    def limiter_seconds(self) -> float:
        """Wall-clock seconds during which at least one request waited for the rate limiter."""
        return union_length(self.waits)

    def api_seconds(self) -> float:
        """Wall-clock seconds during which at least one request was in flight and none waited
        for the rate limiter."""
        if not self.flights:
            return 0.0
        return union_length(self.waits + self.flights) - union_length(self.waits)

    @staticmethod
    @contextmanager
    def recording() -> Iterator[RequestTimes]:
        """Record the requests made in this context (and tasks started from it) until exit."""
        times = RequestTimes()
        token = CURRENT.set(times)
        try:
            yield times
        finally:
            times.closed = True
            CURRENT.reset(token)


CURRENT: ContextVar[RequestTimes | None] = ContextVar("kubetrain_request_times", default=None)


def current() -> RequestTimes | None:
    """The `RequestTimes` recording in this context, if any."""
    return CURRENT.get()


def detached() -> Context:
    """A copy of this context recording nothing: for a background task started inside a unit
    (an Event sent in the background) whose requests the unit does not wait for."""
    ctx = copy_context()
    ctx.run(CURRENT.set, None)
    return ctx


def union_length(intervals: list[Interval]) -> float:
    """Total length covered by `intervals` (overlaps counted once)."""
    total = 0.0
    end = float("-inf")
    for s, e in sorted(intervals):
        if s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def now() -> float:
    return time.perf_counter()
