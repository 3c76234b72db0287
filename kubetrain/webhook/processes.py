"""Large reviews decoded and decided in worker processes, off the webhook's event loop.

Decoding a review holds the interpreter for ~50 ms per MB (orjson does not release the GIL,
nor does validation), so a multi-megabyte review decided in a thread still pauses /healthz,
small reviews, the controller and leader-election renewals on the same event loop. A review
over PROCESS_BYTES is therefore sent, as raw bytes, to a bounded pool of worker processes
(started with 'forkserver', never 'fork': the parent has threads and an event loop); the
worker decodes, decides and encodes it and sends back the answer bytes and a small header
(uid, kind, operation, name — no object).

```python
pool = ReviewProcesses(2, time_limit=5.0, max_queue=8)
await pool.start()                          # workers started and warmed up
review, answer, result = await pool.answer(body, "validate", Decider(...))
# raises BadReview (HTTP 400), PoolBusy (HTTP 429) or ReviewTimedOut / ReviewFailed (HTTP 503)
await pool.stop()
```

Each worker is its own one-process executor, so a worker still busy after `time_limit`
seconds is killed and replaced without touching the others; the review is answered with an
error (fail closed: kube-apiserver then applies the webhook's failurePolicy). At most `count`
reviews run at once and `max_queue` more wait for a worker; a review past that gets HTTP 429.
The Decider (gang flag, replica limit, TrainingPolicy index) travels with every review, so a
worker decides with the policies as they were when the review arrived, like the parent would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from kubetrain.serving import gcfreeze
from kubetrain.webhook.decider import Decider
from kubetrain.webhook.quietgc import header_only
from kubetrain.webhook.review import AdmissionRequest

log = logging.getLogger(__name__)

# Reviews over this size are decided in a worker process: below it, sending the body and
# the decider to a process costs more than the pause decoding it in the parent would.
PROCESS_BYTES = 256 * 1024
REVIEW_PROCESSES = 2
TIME_LIMIT = 5.0
MAX_QUEUE = 8
RESTART_DELAY = 1.0

Answer = tuple[AdmissionRequest, bytes, str]
Work = Callable[[bytes, str, Decider], Answer]


class PoolBusy(Exception):
    """Every worker is busy and `max_queue` reviews already wait for one."""


class ReviewTimedOut(Exception):
    """The worker deciding the review was still busy after the time limit (it was replaced)."""


class ReviewFailed(Exception):
    """The worker deciding the review died (it was replaced)."""


def answer_in_worker(body: bytes, webhook: str, decider: Decider) -> Answer:
    """What a worker runs: the same decision as in the parent, the review sent back without
    its objects (the parent needs only the header for metrics, logs and scale reviews)."""
    review, answer, result = decider.answer(body, webhook)
    return header_only(review), answer, result


def _warm() -> int:
    """Run once in a fresh worker: it has started, and this is its pid. It also installs the
    garbage collector's freeze policy the parent has (`KUBETRAIN_GC_FREEZE`,
    kubetrain.serving.gcfreeze), freezing the decision code imported by now: decoding a
    multi-megabyte review triggers full collections, and without it each walks those ~100,000
    start-up objects again (a 1.1 MB review: 45 ms on average, 30 ms with them frozen;
    docs/performance.md, "Where /mutate's tail came from"). A value the parent rejected at
    start never gets here; in a process that did not check it, it leaves the collector as is."""
    with contextlib.suppress(gcfreeze.GcConfigError):
        gcfreeze.configure(os.environ)
    return os.getpid()


class _Worker:
    """One worker process, as a one-process executor that can be killed and replaced. Its pid
    is the one its first task (`warm`) reported: the executor's own process table is private."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self.executor = ProcessPoolExecutor(1, mp_context=context)
        self.pid: int | None = None

    async def warm(self) -> None:
        self.pid = await asyncio.wrap_future(self.executor.submit(_warm))

    @property
    def pids(self) -> list[int]:
        return [] if self.pid is None else [self.pid]

    def replace(self, *, kill: bool = True) -> None:
        """Kill the process (whatever it is doing; `kill=False`: it already died) and start a
        fresh executor."""
        pid, self.pid = self.pid, None
        if kill and pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = ProcessPoolExecutor(1, mp_context=self._context)


class ReviewProcesses:
    def __init__(
        self,
        count: int = REVIEW_PROCESSES,
        *,
        time_limit: float = TIME_LIMIT,
        max_queue: int = MAX_QUEUE,
        start_method: str = "forkserver",
        work: Work = answer_in_worker,
    ) -> None:
        if count < 1:
            raise ValueError("ReviewProcesses needs at least one process")
        self.count = count
        self.time_limit = time_limit
        self.max_queue = max_queue
        self.start_method = start_method
        self.work = work  # tests inject a slow or stuck one
        self.replaced = 0  # workers killed or found dead and replaced
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._workers: list[_Worker] = []
        self._waiting = 0
        self._warming: set[asyncio.Task[None]] = set()

    @property
    def pids(self) -> list[int]:
        return [pid for worker in self._workers for pid in worker.pids]

    @property
    def queued(self) -> int:
        return self._waiting

    async def start(self) -> None:
        if self._workers:
            return
        context = multiprocessing.get_context(self.start_method)
        if self.start_method == "forkserver":
            # Workers are forked from a server that has already imported the decision code.
            context.set_forkserver_preload(["kubetrain.webhook.processes"])
        self._workers = [_Worker(context) for _ in range(self.count)]
        await asyncio.gather(*(w.warm() for w in self._workers))
        for worker in self._workers:
            self._idle.put_nowait(worker)

    async def answer(self, body: bytes, webhook: str, decider: Decider) -> Answer:
        if not self._workers:
            raise RuntimeError("ReviewProcesses.answer before start()")
        if self._idle.empty() and self._waiting >= self.max_queue:
            raise PoolBusy()
        self._waiting += 1
        try:
            worker = await self._idle.get()
        finally:
            self._waiting -= 1
        fresh = False
        try:
            future = worker.executor.submit(self.work, body, webhook, decider)
            try:
                return await asyncio.wait_for(asyncio.wrap_future(future), self.time_limit)
            except TimeoutError:
                fresh = self._replace(worker, f"still busy after {self.time_limit:g}s")
                raise ReviewTimedOut() from None
            except BrokenProcessPool:
                fresh = self._replace(worker, "died", kill=False)
                raise ReviewFailed() from None
        finally:
            if fresh:
                # The replacement takes reviews once it has started (its start-up is not
                # counted against the next review's time limit).
                task = asyncio.get_running_loop().create_task(self._return_when_warm(worker))
                self._warming.add(task)
                task.add_done_callback(self._warming.discard)
            else:
                self._idle.put_nowait(worker)

    def _replace(self, worker: _Worker, why: str, *, kill: bool = True) -> bool:
        log.error("webhook review process %s %s; replacing it", worker.pids or "(gone)", why)
        worker.replace(kill=kill)
        self.replaced += 1
        return True

    async def _return_when_warm(self, worker: _Worker) -> None:
        while True:
            try:
                await worker.warm()
            except Exception as exc:
                log.error("webhook review process failed to start (%s); retrying", exc)
                await asyncio.sleep(RESTART_DELAY)
                worker.replace(kill=False)
                continue
            if worker in self._workers:
                self._idle.put_nowait(worker)
            return

    async def stop(self) -> None:
        workers, self._workers = self._workers, []
        for task in list(self._warming):
            task.cancel()
        for worker in workers:
            worker.executor.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(worker.executor.shutdown, True)
        self._idle = asyncio.Queue()
