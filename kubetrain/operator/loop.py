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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from kubetrain.kube.client import ApiError
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.informer import Informer
from kubetrain.kube.workqueue import WorkQueue


class ReconcileLoop:
    """Workers over `queue` calling `reconcile(key)`; the informers and recorder it stops."""

    log: logging.Logger = logging.getLogger(__name__)
    subject = ""  # names the keys in the retry log lines: "reconcile <subject><key>"

    queue: WorkQueue[str]
    informers: list[Informer]
    recorder: EventRecorder
    _workers: list[asyncio.Task[None]]

    async def reconcile(self, key: str) -> None:
        raise NotImplementedError

    def start_workers(self, count: int, name: str) -> None:
        """`count` worker tasks named `<name> <i>`."""
        self._workers = [asyncio.create_task(self._worker(), name=f"{name} {i}") for i in range(count)]

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
            try:
                await self.reconcile(key)
                self.queue.forget(key)
            except Exception as err:  # an API error: retry with back-off, never crash the worker
                if isinstance(err, ApiError):
                    self.log.info("reconcile %s%s: %s (retrying)", self.subject, key, err)
                else:
                    self.log.exception("reconcile %s%s failed (retrying)", self.subject, key)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)
