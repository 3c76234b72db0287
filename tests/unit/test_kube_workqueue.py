"""WorkQueue: dedupe, per-key serialisation, delayed / at-time adds, back-off, shutdown."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta

import pytest

from kubetrain.kube.clock import FakeClock
from kubetrain.kube.workqueue import ExponentialBackoff, WorkQueue
from kubetrain.serving.metrics import REGISTRY


async def _get_now(queue: WorkQueue[str]) -> str | None:
    return await asyncio.wait_for(queue.get(), 1)


async def _nothing_ready(queue: WorkQueue[str]) -> bool:
    task = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0.01)
    ready = task.done()
    task.cancel()
    return not ready


async def test_add_dedupes_keys_waiting_to_be_processed() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert await _get_now(q) == "a"
    assert await _get_now(q) == "b"
    assert await _nothing_ready(q)


async def test_key_readded_while_processing_is_handed_out_again_only_after_done() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    assert await _get_now(q) == "a"
    q.add("a")  # an event arrives mid-reconcile
    q.add("a")
    assert len(q) == 0
    assert await _nothing_ready(q)  # never handed to a second worker concurrently
    q.done("a")
    assert await _get_now(q) == "a"  # processed again after, once
    q.done("a")
    assert await _nothing_ready(q)


async def test_concurrent_workers_never_share_a_key() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    active: set[str] = set()
    overlaps: list[str] = []
    processed: list[str] = []

    async def worker() -> None:
        while (key := await q.get()) is not None:
            if key in active:
                overlaps.append(key)
            active.add(key)
            await asyncio.sleep(0.001)
            processed.append(key)
            active.discard(key)
            q.done(key)

    workers = [asyncio.ensure_future(worker()) for _ in range(4)]
    for _ in range(20):
        for key in ("a", "b", "c"):
            q.add(key)
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    q.shutdown()
    await asyncio.wait_for(asyncio.gather(*workers), 1)
    assert overlaps == []
    assert {"a", "b", "c"} <= set(processed)


async def test_add_after_waits_on_the_injected_clock() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("a", 10)
    await clock.advance(9.9)
    assert len(q) == 0
    assert q.pending_delay("a") == pytest.approx(0.1)
    await clock.advance(0.1)
    assert len(q) == 1
    assert await _get_now(q) == "a"


async def test_add_at_fires_at_the_exact_wall_clock_time() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    deadline = clock.now() + timedelta(seconds=3600)
    q.add_at("job", deadline)
    await clock.advance(3599)
    assert len(q) == 0
    await clock.advance(1)
    assert await _get_now(q) == "job"


async def test_add_at_in_the_past_is_ready_now() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_at("job", clock.now() - timedelta(seconds=5))
    assert await _get_now(q) == "job"


async def test_earliest_delay_wins_and_later_ones_do_not_duplicate() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("a", 50)
    q.add_after("a", 5)  # an earlier deadline replaces the later one
    q.add_after("a", 20)  # a later deadline does not postpone it
    await clock.advance(5)
    assert await _get_now(q) == "a"
    q.done("a")
    await clock.advance(100)
    assert len(q) == 0  # the superseded 20 s / 50 s entries never fire


async def test_delayed_items_fire_in_deadline_order() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("late", 30)
    q.add_after("early", 10)
    q.add_after("middle", 20)
    await clock.advance(30)
    assert [await _get_now(q) for _ in range(3)] == ["early", "middle", "late"]


async def test_delayed_add_of_a_key_being_processed_runs_after_done() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add("a")
    assert await _get_now(q) == "a"
    q.add_after("a", 1)
    await clock.advance(1)
    assert await _nothing_ready(q)
    q.done("a")
    assert await _get_now(q) == "a"


def test_backoff_grows_exponentially_from_5ms_to_a_1000s_cap() -> None:
    b: ExponentialBackoff[str] = ExponentialBackoff()
    delays = [b.when("k") for _ in range(20)]
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert all(later >= earlier for earlier, later in itertools.pairwise(delays))
    assert delays[-1] == 1000.0
    assert b.num_requeues("k") == 20
    assert b.when("other") == pytest.approx(0.005)  # per key
    b.forget("k")
    assert b.when("k") == pytest.approx(0.005)
    for _ in range(200):
        b.when("many")  # no overflow however often a key fails
    assert b.when("many") == 1000.0


async def test_rate_limited_readd_backs_off_and_forget_resets() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock, backoff=ExponentialBackoff(base=1.0, cap=8.0))
    for expected_delay in (1.0, 2.0, 4.0, 8.0, 8.0):
        q.add_rate_limited("a")
        assert q.pending_delay("a") == pytest.approx(expected_delay)
        await clock.advance(expected_delay - 0.01)
        assert len(q) == 0
        await clock.advance(0.01)
        assert await _get_now(q) == "a"
        q.done("a")
    assert q.num_requeues("a") == 5
    q.forget("a")
    assert q.num_requeues("a") == 0
    q.add_rate_limited("a")
    assert q.pending_delay("a") == pytest.approx(1.0)


async def test_shutdown_releases_waiting_workers_and_ignores_adds() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    waiting = asyncio.ensure_future(q.get())
    await asyncio.sleep(0)
    q.shutdown()
    assert await asyncio.wait_for(waiting, 1) is None
    q.add("a")
    assert len(q) == 0
    assert await _get_now(q) is None


async def test_cancelled_getter_does_not_swallow_a_key() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    first = asyncio.ensure_future(q.get())
    second = asyncio.ensure_future(q.get())
    await asyncio.sleep(0)
    q.add("a")
    first.cancel()  # wakes up cancelled: the key must go to the other getter
    assert await asyncio.wait_for(second, 1) == "a"


async def test_depth_gauge_tracks_ready_keys() -> None:
    q: WorkQueue[str] = WorkQueue(name="test-depth", clock=FakeClock())

    def depth() -> float | None:
        return REGISTRY.get_sample_value("kubetrain_workqueue_depth", {"queue": "test-depth"})

    q.add("a")
    q.add("b")
    assert depth() == 2
    await _get_now(q)
    assert depth() == 1


async def test_add_batched_coalesces_a_burst_into_one_hand_out_after_the_window() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())  # the window is real time, whatever the clock
    for _ in range(50):
        q.add_batched("job", 0.05)
    assert q.is_batched("job") and len(q) == 0
    assert await _nothing_ready(q)
    assert await asyncio.wait_for(q.get(), 1) == "job"
    q.done("job")
    assert not q.is_batched("job")
    assert await _nothing_ready(q)  # fifty adds, one hand-out


async def test_plain_add_ends_a_batch_at_once_and_a_queued_key_is_not_batched_again() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add_batched("job", 30.0)
    q.add("job")
    assert not q.is_batched("job")
    assert await _get_now(q) == "job"
    q.done("job")
    q.add("other")
    q.add_batched("other", 30.0)  # already waiting to be handed out: nothing to batch
    assert not q.is_batched("other")
    assert await _get_now(q) == "other"


async def test_add_batched_while_processing_hands_the_key_out_again_after_the_window() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("job")
    assert await _get_now(q) == "job"
    q.add_batched("job", 0.02)  # an event the running reconcile may have missed
    q.done("job")
    assert await asyncio.wait_for(q.get(), 1) == "job"


async def test_shutdown_cancels_pending_batches() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add_batched("job", 0.01)
    q.shutdown()
    assert not q.is_batched("job")
    assert await q.get() is None


@pytest.mark.parametrize("late", range(14))
async def test_a_delay_added_while_the_clock_advances_fires_at_its_deadline(late: int) -> None:
    """The delay loop may be woken by an add in the middle of `FakeClock.advance`: its wait must
    still end at the key's deadline, not that much later (a deadline reconcile was lost so)."""
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)

    async def add_late() -> None:
        for _ in range(late):
            await asyncio.sleep(0)
        q.add_after("job", 300)

    adder = asyncio.ensure_future(add_late())
    await clock.advance(10)
    await adder
    deadline = 300 + (0 if q.pending_delay("job") == 290 else 10)  # added before or after the move
    await clock.advance(deadline - clock.monotonic() + 1e-6)  # 1 µs past the key's deadline
    assert await asyncio.wait_for(q.get(), 1) == "job"
    q.shutdown()
