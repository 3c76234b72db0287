"""An asyncio work queue with client-go `workqueue` semantics.

    queue: WorkQueue[str] = WorkQueue(name="jobs")
    queue.add("ns/job")                      # ready now (deduplicated)
    queue.add_after("ns/job", 2.5)           # ready in 2.5 s
    queue.add_at("ns/job", deadline)         # ready at an absolute (aware) datetime
    queue.add_rate_limited("ns/job")         # ready after this key's exponential back-off
    queue.add_batched("ns/job", 0.3)         # ready within 0.3 s, coalescing adds until then

    async def worker() -> None:
        while (key := await queue.get()) is not None:   # None once shut down
            try:
                await reconcile(key)
                queue.forget(key)                       # reset the key's back-off
            except Exception:
                queue.add_rate_limited(key)
            finally:
                queue.done(key)

Guarantees:
- Dedupe: a key added several times before a worker takes it is handed out once.
- Per-key serialisation: a key is never handed to two workers at once. A key re-added while it
  is being processed is handed out again only after `done(key)`.
- Delays: `add_after`/`add_at` keep the *earliest* pending deadline per key; a plain `add` of a
  delayed key makes it ready immediately (the later delayed entry then just re-adds it, which
  dedupes). Delays are measured on the injected `Clock` (see `kubetrain.kube.clock.FakeClock`).
- Batching: `add_batched(key, window)` makes the key ready `window` seconds of *real* time
  after the first such call; further `add_batched` calls of that key until then (and while it
  is already queued) add nothing, so a burst of events costs one hand-out per window — as
  kube's Job controller batches a job's pod events. A plain `add` makes it ready at once. The
  window is real time even with an injected clock: it spaces work out, no behaviour waits on it.
- Back-off: `add_rate_limited(key)` waits `base * 2**failures` seconds (default 5 ms doubling up
  to a 1000 s cap, as client-go's default controller rate limiter); `forget(key)` resets it and
  `num_requeues(key)` reports it.
- `shutdown()` makes `get()` return None to every waiting and future caller; adds are ignored.
- `len(queue)` is the number of keys ready now; it is exported as the Prometheus gauge
  `kubetrain_workqueue_depth{queue=<name>}`.

client-go's work queue series (kubetrain.serving.crmetrics, `name`=`controller`=the queue's
name) are kept where client-go keeps them (util/workqueue queue.go, delaying_queue.go,
metrics.go `defaultQueueMetrics`), on the injected clock: `workqueue_adds_total` +1 per add
that is not deduplicated; `workqueue_depth` (+1 per such add, -1 per hand-out upstream) is the
number of keys added and not handed out yet, read when scraped (a key re-added while processing
counts: it waits too); `workqueue_queue_duration_seconds` from a key's first
such add to its hand-out; `workqueue_work_duration_seconds` from hand-out to `done`;
`workqueue_retries_total` +1 per `add_after` (so per `add_at` and `add_rate_limited`) before a
shut-down; `workqueue_unfinished_work_seconds` and `workqueue_longest_running_processor_seconds`
the summed and the longest age of the hand-outs not yet done, computed when scraped (client-go
refreshes them every 500 ms). A batched add counts when its window ends and it becomes an add.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import weakref
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Generic, TypeVar

from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.serving.crmetrics import queue_series
from kubetrain.serving.metrics import QUEUE_DEPTH

K = TypeVar("K", bound=Hashable)

DEFAULT_BASE_DELAY = 0.005
DEFAULT_MAX_DELAY = 1000.0


class ExponentialBackoff(Generic[K]):
    """Per-key exponential back-off: `base * 2**n` for the key's n-th consecutive failure,
    capped at `cap` seconds."""

    def __init__(self, base: float = DEFAULT_BASE_DELAY, cap: float = DEFAULT_MAX_DELAY) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        if n >= 64:  # 2**64 * base is far past any cap; avoid float overflow
            return self.cap
        return min(self.cap, self.base * float(2**n))

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)


def _ages(queue: weakref.ReferenceType[WorkQueue[K]], fold: Callable[[Iterable[float]], float]) -> float:
    """`fold` (sum, max) of the ages of `queue`'s hand-outs not yet done; 0 with none."""
    q = queue()
    if q is None or not q._started_at:
        return 0.0
    now = q._clock.monotonic()
    return fold(now - started for started in q._started_at.values())


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        name: str = "jobs",
        clock: Clock | None = None,
        backoff: ExponentialBackoff[K] | None = None,
    ) -> None:
        self.name = name
        self._clock = clock or SYSTEM_CLOCK
        self._backoff: ExponentialBackoff[K] = backoff if backoff is not None else ExponentialBackoff()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._shutting_down = False
        self._getters: deque[asyncio.Future[None]] = deque()
        # delayed keys: heap of (monotonic deadline, seq, key); _waiting holds the live deadline
        self._heap: list[tuple[float, int, K]] = []
        self._waiting: dict[K, float] = {}
        self._seq = itertools.count()
        self._delay_changed = asyncio.Event()
        self._delay_task: asyncio.Task[None] | None = None
        self._batched: dict[K, asyncio.TimerHandle] = {}
        self._gauge = QUEUE_DEPTH.labels(queue=name)
        self._gauge.set(0)
        self._series = queue_series(name)
        self._added_at: dict[K, float] = {}  # key -> its first add not handed out yet
        self._started_at: dict[K, float] = {}  # key -> its hand-out not done yet
        this = weakref.ref(self)  # the latest queue of a name is the one scraped
        self._series.unfinished.set_function(lambda: _ages(this, sum))
        self._series.depth.set_function(lambda: float(len(q._dirty)) if (q := this()) is not None else 0.0)
        self._series.longest.set_function(lambda: _ages(this, max))

    # --- adding ---------------------------------------------------------------------------------
    def add(self, key: K) -> None:
        """Make `key` ready now (no-op if it is already waiting to be processed)."""
        if self._shutting_down or key in self._dirty:
            return
        handle = self._batched.pop(key, None)
        if handle is not None:
            handle.cancel()
        self._dirty.add(key)
        self._series.adds.inc()
        if key not in self._added_at:
            self._added_at[key] = self._clock.monotonic()
        if key in self._processing:
            return  # handed out again by done()
        self._push(key)

    def add_after(self, key: K, seconds: float) -> None:
        """Make `key` ready after `seconds` (immediately when `seconds <= 0`)."""
        if self._shutting_down:
            return
        self._series.retries.inc()
        if seconds <= 0:
            self.add(key)
            return
        deadline = self._clock.monotonic() + seconds
        current = self._waiting.get(key)
        if current is not None and current <= deadline:
            return
        self._waiting[key] = deadline
        heapq.heappush(self._heap, (deadline, next(self._seq), key))
        self._delay_changed.set()
        self._ensure_delay_task()

    def add_batched(self, key: K, window: float) -> None:
        """Make `key` ready `window` seconds (real time) from the first call of a batch; calls
        until then, or while the key is already waiting to be handed out, are coalesced."""
        if self._shutting_down or key in self._dirty or key in self._batched:
            return
        if window <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        self._batched[key] = loop.call_later(window, self._batch_due, key)

    def is_batched(self, key: K) -> bool:
        """Whether `key` waits for the end of a batching window."""
        return key in self._batched

    def add_at(self, key: K, when: datetime) -> None:
        """Make `key` ready at the wall-clock time `when` (timezone-aware)."""
        self.add_after(key, (when - self._clock.now()).total_seconds())

    def add_rate_limited(self, key: K) -> None:
        """Re-add `key` after its exponential back-off (call after a failed attempt)."""
        self.add_after(key, self._backoff.when(key))

    def forget(self, key: K) -> None:
        """Reset `key`'s back-off (call after a successful attempt)."""
        self._backoff.forget(key)

    def num_requeues(self, key: K) -> int:
        return self._backoff.num_requeues(key)

    # --- consuming ------------------------------------------------------------------------------
    async def get(self) -> K | None:
        """Wait for a ready key and mark it processing; None once the queue is shut down."""
        while not self._queue and not self._shutting_down:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                with contextlib.suppress(ValueError):
                    self._getters.remove(waiter)
                if waiter.done() and not waiter.cancelled() and self._queue:
                    self._wake_one()  # pass our wake-up on to another getter
                raise
        if self._shutting_down:
            return None
        key = self._queue.popleft()
        self._gauge.set(len(self._queue))
        self._processing.add(key)
        self._dirty.discard(key)
        now = self._clock.monotonic()
        self._started_at[key] = now
        added = self._added_at.pop(key, None)
        if added is not None:
            self._series.queue_duration.observe(now - added)
        return key

    def done(self, key: K) -> None:
        """Mark `key` finished; if it was re-added meanwhile it becomes ready again now."""
        started = self._started_at.pop(key, None)
        if started is not None:
            self._series.work_duration.observe(self._clock.monotonic() - started)
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._push(key)

    # --- lifecycle ------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop handing out keys: every `get()` returns None from now on."""
        self._shutting_down = True
        for handle in self._batched.values():
            handle.cancel()
        self._batched.clear()
        if self._delay_task is not None:
            self._delay_task.cancel()
            self._delay_task = None
        self._wake_all()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        return len(self._queue)

    def is_processing(self, key: K) -> bool:
        return key in self._processing

    def pending_delay(self, key: K) -> float | None:
        """Seconds until `key`'s delayed add fires, or None if it has none."""
        deadline = self._waiting.get(key)
        return None if deadline is None else max(0.0, deadline - self._clock.monotonic())

    # --- internals ------------------------------------------------------------------------------
    def _push(self, key: K) -> None:
        self._queue.append(key)
        self._gauge.set(len(self._queue))
        self._wake_one()

    def _batch_due(self, key: K) -> None:
        if self._batched.pop(key, None) is not None:
            self.add(key)

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _ensure_delay_task(self) -> None:
        if self._delay_task is None or self._delay_task.done():
            self._delay_task = asyncio.get_running_loop().create_task(self._delay_loop())

    def _release_due(self) -> None:
        now = self._clock.monotonic()
        while self._heap and self._heap[0][0] <= now:
            deadline, _, key = heapq.heappop(self._heap)
            if self._waiting.get(key) != deadline:
                continue  # superseded by an earlier deadline that already fired or is pending
            del self._waiting[key]
            self.add(key)

    async def _sleep_until(self, deadline: float) -> None:
        # The delay is computed when the sleep starts, not when it was scheduled: a clock that
        # moved in between (a FakeClock advanced meanwhile) must not push the wake-up later.
        await self._clock.sleep(deadline - self._clock.monotonic())

    async def _delay_loop(self) -> None:
        while not self._shutting_down:
            self._release_due()
            self._delay_changed.clear()
            if not self._heap:
                await self._delay_changed.wait()
                continue
            sleeper = asyncio.ensure_future(self._sleep_until(self._heap[0][0]))
            changed = asyncio.ensure_future(self._delay_changed.wait())
            try:
                await asyncio.wait({sleeper, changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                changed.cancel()
