"""One background asyncio task that its owner starts and stops: devcluster's periodic sweeps
(Event TTL, history compaction) and its in-process controllers' work loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Iterable
from typing import Any


class BackgroundTask:
    """`start()` runs `run()` as a task named `name` unless it already runs; `stop()` cancels it
    and waits for it to end. Both may be called any number of times."""

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


async def every(seconds: float, tick: Callable[[], object]) -> None:
    """Call `tick()` every `seconds`, until cancelled."""
    while True:
        await asyncio.sleep(seconds)
        tick()


async def cancel_all(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel every task, then wait for each to end; what a task raised on its way out is not
    the stopper's concern (an owner's `stop()` of the tasks it spawned)."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
