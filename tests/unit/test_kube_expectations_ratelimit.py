"""Expectations (pending creates/deletes per job, TTL expiry) and the client token bucket."""

from __future__ import annotations

import asyncio

import pytest

from kubetrain.kube.clock import FakeClock
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.ratelimit import TokenBucket

# --- expectations -----------------------------------------------------------------------------


def test_expectations_are_satisfied_once_every_create_and_delete_is_observed() -> None:
    exp = Expectations(clock=FakeClock())
    assert exp.satisfied("ns/j")
    exp.expect_creations("ns/j", ["j-worker-0", "j-worker-1"])
    exp.expect_deletions("ns/j", ["j-master-0"])
    assert not exp.satisfied("ns/j")
    exp.creation_observed("ns/j", "j-worker-0")
    exp.creation_observed("ns/j", "j-worker-0")  # duplicate events are harmless
    exp.deletion_observed("ns/j", "j-master-0")
    assert not exp.satisfied("ns/j")
    assert exp.pending("ns/j") == (frozenset({"j-worker-1"}), frozenset())
    exp.creation_observed("ns/j", "j-worker-1")
    assert exp.satisfied("ns/j")
    assert len(exp) == 0


def test_expectations_are_per_job_and_ignore_unexpected_children() -> None:
    exp = Expectations(clock=FakeClock())
    exp.expect_creations("ns/a", ["a-worker-0"])
    exp.creation_observed("ns/b", "a-worker-0")  # another job's event
    exp.creation_observed("ns/a", "a-worker-9")  # a child we did not create
    assert not exp.satisfied("ns/a")
    assert exp.satisfied("ns/b")


def test_empty_expectation_is_satisfied() -> None:
    exp = Expectations(clock=FakeClock())
    exp.expect_creations("ns/j", [])
    assert exp.satisfied("ns/j")


def test_lost_event_cannot_wedge_a_job_expectations_expire_after_ttl() -> None:
    clock = FakeClock()
    exp = Expectations(ttl=300, clock=clock)
    exp.expect_creations("ns/j", ["j-worker-0"])
    asyncio.run(clock.advance(299))
    assert not exp.satisfied("ns/j")
    assert exp.expires_in("ns/j") == pytest.approx(1)
    asyncio.run(clock.advance(1))
    assert exp.satisfied("ns/j")
    assert exp.pending("ns/j") == (frozenset(), frozenset())


def test_raising_new_expectations_restarts_the_ttl() -> None:
    clock = FakeClock()
    exp = Expectations(ttl=300, clock=clock)
    exp.expect_creations("ns/j", ["j-worker-0"])
    asyncio.run(clock.advance(200))
    exp.expect_deletions("ns/j", ["j-worker-1"])
    asyncio.run(clock.advance(200))
    assert not exp.satisfied("ns/j")


def test_forget_drops_a_deleted_job() -> None:
    exp = Expectations(clock=FakeClock())
    exp.expect_creations("ns/j", ["j-worker-0"])
    exp.forget("ns/j")
    assert exp.satisfied("ns/j")
    assert exp.expires_in("ns/j") is None


# --- token bucket ------------------------------------------------------------------------------


def test_bucket_allows_a_burst_then_spaces_requests_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    # further reservations queue up 1/qps apart (computed up front, not serialised)
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.1, 0.2, 0.3])


def test_bucket_refills_at_qps_up_to_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=5, clock=clock)
    for _ in range(5):
        bucket.reserve()
    asyncio.run(clock.advance(0.2))  # two tokens back
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0, 0, 0.1])
    asyncio.run(clock.advance(100))  # refill is capped at burst
    assert [bucket.reserve() for _ in range(5)] == [0] * 5
    assert bucket.reserve() > 0


def test_non_positive_qps_disables_limiting() -> None:
    bucket = TokenBucket(qps=0, burst=0, clock=FakeClock())
    assert all(bucket.reserve() == 0 for _ in range(1000))


def test_burst_must_be_positive() -> None:
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(qps=5, burst=0)


async def test_concurrent_acquires_wait_in_parallel_not_in_series() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=100, burst=10, clock=clock)
    finished: list[int] = []

    async def request(i: int) -> None:
        await bucket.acquire()
        finished.append(i)

    tasks = [asyncio.ensure_future(request(i)) for i in range(30)]
    await clock.advance(0)
    assert len(finished) == 10  # the burst goes out at once
    assert clock.sleepers == 20  # the rest each wait for their own slot, concurrently
    await clock.advance(0.1)
    assert len(finished) == 20  # 100 qps: ten more after 0.1 s
    await clock.advance(0.1)
    assert len(finished) == 30
    await asyncio.gather(*tasks)
