"""ConnectionGuard's deadlines: one timer per connection whose deadline moves on re-arming, and
a connection still closed exactly when its latest deadline passes (the loop's clock is set by
the test; the timers are fired by hand)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubetrain.serving.guard import ConnectionGuard, ConnectionLimits


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.aborted


class Clock:
    def __init__(self, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        monkeypatch.setattr(loop, "time", lambda: self.now)


@pytest.fixture
async def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(asyncio.get_running_loop(), monkeypatch)


def opened(guard: ConnectionGuard) -> Any:
    transport = FakeTransport()
    guard._open.add(transport)
    return transport


def fire(guard: ConnectionGuard, clock: Clock, transport: Any) -> None:
    """The pending timer of `transport` fires at its time."""
    clock.now = guard._timers[transport].when()
    guard._check(transport)


async def test_a_connection_rearmed_by_requests_expires_at_its_latest_deadline(clock: Clock) -> None:
    guard = ConnectionGuard(ConnectionLimits(header_timeout=10, idle_timeout=60))
    t = opened(guard)
    guard._arm(t, 10)  # connected: the header deadline
    first = guard._timers[t]
    for at in (1005.0, 1030.0, 1050.0):  # three requests, each answered at `at`
        clock.now = at
        guard._disarm(t)
        guard._arm(t, 60)
    assert guard._timers[t] is first  # no timer made per request
    fire(guard, clock, t)  # the header deadline (1010) passed long ago: re-scheduled, not closed
    assert not t.aborted and guard._timers[t].when() == 1110.0
    clock.now = 1109.9
    assert not t.aborted
    fire(guard, clock, t)
    assert t.aborted and guard.expired == 1


async def test_an_earlier_deadline_replaces_the_pending_timer(clock: Clock) -> None:
    guard = ConnectionGuard(ConnectionLimits(header_timeout=60, idle_timeout=5))
    t = opened(guard)
    guard._arm(t, 60)
    first = guard._timers[t]
    guard._disarm(t)
    guard._arm(t, 5)
    assert first.cancelled() and guard._timers[t].when() == 1005.0
    fire(guard, clock, t)
    assert t.aborted and guard.expired == 1


async def test_a_connection_busy_with_a_request_when_its_timer_fires_is_kept(clock: Clock) -> None:
    guard = ConnectionGuard(ConnectionLimits())
    t = opened(guard)
    guard._arm(t, 10)
    guard._disarm(t)  # a request came in; its handler is still running when the timer fires
    fire(guard, clock, t)
    assert not t.aborted and t not in guard._timers
    guard._arm(t, 60)  # answered: a new timer for the idle deadline
    fire(guard, clock, t)
    assert t.aborted


async def test_a_closed_connection_leaves_no_timer_nor_deadline(clock: Clock) -> None:
    guard = ConnectionGuard(ConnectionLimits())
    transports = [opened(guard) for _ in range(100)]
    for t in transports:
        guard._arm(t, 10)
    timers = [guard._timers[t] for t in transports]
    for t in transports:
        guard._open.discard(t)
        guard._forget(t)
    assert guard._timers == {} and guard._deadlines == {}
    assert all(timer.cancelled() for timer in timers)
