"""watch → queue → reconcile: the loop every controller of the operator runs.

    class CronController(ReconcileLoop):
        log = logging.getLogger(__name__)  # the retry log lines are this module's
        subject = "cron "                  # "reconcile cron <key>: ... (retrying)"

        async def reconcile(self, key: str) -> None: ...

    # start(): informers (their handlers add keys to self.queue) started and synced, then
    self.start_workers(config.workers, "kubetrain cron worker")
    # stop():
    await self.stop_loop()                 # queue shut, workers ended, informers stopped

Informers feed `queue` with keys; `start_workers` runs that many tasks taking keys off the queue,
each key handed to one worker at a time (`kubetrain.kube.workqueue`). A reconcile that returns
resets the key's back-off; one that raises is requeued with back-off (an `ApiError` logged as
info, anything else with its traceback) and never ends its worker. `stop_loop` shuts the queue,
ends the workers, stops the informers and flushes the event recorder. The job controller
(`controller.py`) and the cron controller (`crons.py`) are the two loops.

The worker is where controller-runtime's controller series are counted
(kubetrain.serving.crmetrics), as its pkg/internal/controller/controller.go counts them: each
key's prefix (the part before the first `/`: a job resource id, a cron group) names a
controller (`controller_of`). `start_workers` initialises the series of every prefix in
`key_prefixes()` (`initMetrics`: counters at 0, max_concurrent_reconciles = the worker count,
which every controller of the loop shares). Per hand-out (`processNextWorkItem`,
`reconcileHandler`): active_workers up while it runs (a count read when scraped);
reconcile_time_seconds its duration;
reconcile_total{result=success} when `reconcile` returns, `requeue_after` when it returns leaving
a delayed re-add of its key pending (a wake-up it asked for: controller-runtime's
`Result.RequeueAfter`), `error` (and reconcile_errors_total) when it raises; an exception other
than an `ApiError` (a bug, logged with its traceback) also counts in reconcile_panics_total, as
a recovered panic does upstream. kubetrain has no terminal errors and no requeue without a delay,
so terminal_reconcile_errors_total and `result="requeue"` stay 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable

from kubetrain.kube.client import ApiError
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.informer import Informer
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.serving.crmetrics import ACTIVE_WORKERS, ControllerSeries, controller_series


class ReconcileLoop:
    """Workers over `queue` calling `reconcile(key)`; the informers and recorder it stops."""

    log: logging.Logger = logging.getLogger(__name__)
    subject = ""  # names the keys in the retry log lines: "reconcile <subject><key>"

    queue: WorkQueue[str]
    informers: list[Informer]
    recorder: EventRecorder
    _workers: list[asyncio.Task[None]]
    _series: dict[str, ControllerSeries]
    _active: dict[str, int]  # prefix -> workers reconciling one of its keys now
    _worker_count = 0

    async def reconcile(self, key: str) -> None:
        raise NotImplementedError

    def controller_of(self, prefix: str) -> str:
        """The controller-runtime controller name of keys starting with `prefix/` (by default the
        queue's name: one controller per loop)."""
        return self.queue.name

    def key_prefixes(self) -> Iterable[str]:
        """The key prefixes of what the loop serves (their series are initialised at start)."""
        return ()

    def start_workers(self, count: int, name: str) -> None:
        """`count` worker tasks named `<name> <i>`."""
        self._worker_count = count
        self._series = {}
        self._active = {}
        for prefix in self.key_prefixes():
            self._series_of(prefix)
        self._workers = [asyncio.create_task(self._worker(), name=f"{name} {i}") for i in range(count)]

    def _series_of(self, prefix: str) -> ControllerSeries:
        series = self._series.get(prefix)
        if series is None:
            controller = self.controller_of(prefix)
            series = self._series[prefix] = controller_series(controller, self._worker_count)
            active = self._active
            active[prefix] = 0
            ACTIVE_WORKERS.labels(controller).set_function(lambda: float(active.get(prefix, 0)))
        return series

    async def stop_workers(self) -> None:
        """Shut the queue and end the workers (a reconcile under way is cancelled)."""
        self.queue.shutdown()
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._workers = []

    async def stop_informers(self) -> None:
        """Stop the informers, then send the events still buffered."""
        for informer in self.informers:
            await informer.stop()
        self.informers = []
        await self.recorder.flush()

    async def stop_loop(self) -> None:
        await self.stop_workers()
        await self.stop_informers()

    async def _worker(self) -> None:
        while (key := await self.queue.get()) is not None:
            prefix = key.partition("/")[0]
            series = self._series_of(prefix)
            self._active[prefix] += 1
            started = time.perf_counter()
            try:
                await self.reconcile(key)
                self.queue.forget(key)
                if self.queue.pending_delay(key) is None:
                    series.success.inc()
                else:
                    series.requeue_after.inc()
            except Exception as err:  # an API error: retry with back-off, never crash the worker
                series.errors.inc()
                series.error.inc()
                if isinstance(err, ApiError):
                    self.log.info("reconcile %s%s: %s (retrying)", self.subject, key, err)
                else:
                    series.panics.inc()
                    self.log.exception("reconcile %s%s failed (retrying)", self.subject, key)
                self.queue.add_rate_limited(key)
            finally:
                series.time.observe(time.perf_counter() - started)
                self._active[prefix] -= 1
                self.queue.done(key)
