"""One background asyncio task that its owner starts and stops: devcluster's periodic sweeps
(Event TTL, history compaction) and its in-process controllers' work loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
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
