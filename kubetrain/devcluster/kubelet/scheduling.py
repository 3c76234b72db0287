"""When for the pod simulator: per-pod locks and timers (where is `binder.py`).

`PodTimers` serialises the simulator's work on one pod (`lock(key)`: a lock that exists only
while someone holds or awaits it, so a deleted pod leaves nothing behind) and holds at most one
pending timer per pod (a start delay or a run's end), identified by a marker tuple whose second
element is the pod's uid: scheduling the same marker again keeps the running timer, another
marker replaces it, and a timer whose pod is gone or was recreated (another uid) does nothing.
Delays run on an injectable `kubetrain.kube.clock.Clock`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kubetrain.kube.clock import Clock

Key = tuple[str, str]


def pod_key(pod: dict[str, Any]) -> Key:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


@dataclass(eq=False)
class _KeyLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0  # holders and waiters


class PodTimers:
    def __init__(self, clock: Clock, current_uid: Callable[[Key], str | None]) -> None:
        self.clock = clock
        self._current_uid = current_uid  # the uid of the pod now cached under a key, None if gone
        self._locks: dict[Key, _KeyLock] = {}
        self._timers: dict[Key, tuple[tuple[Any, ...], asyncio.Task[None]]] = {}

    @contextlib.asynccontextmanager
    async def lock(self, key: Key) -> AsyncIterator[None]:
        """Hold the pod's lock; the last user to leave drops it."""
        entry = self._locks.get(key)
        if entry is None:
            entry = self._locks[key] = _KeyLock()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0 and self._locks.get(key) is entry:
                del self._locks[key]

    def tracked(self) -> int:
        """Pods with a lock in use or a pending timer (0 once every pod is gone and idle)."""
        return len(self._locks.keys() | self._timers.keys())

    def schedule(
        self, key: Key, marker: tuple[Any, ...], delay: float, action: Callable[[Key], Awaitable[None]]
    ) -> None:
        """Run `action(key)` under the pod's lock after `delay` seconds, if the pod (uid
        `marker[1]`) is still there; replaces the pod's timer unless it has the same marker."""
        current = self._timers.get(key)
        if current is not None and current[0] == marker and not current[1].done():
            return
        self.cancel(key)

        async def fire() -> None:
            await self.clock.sleep(max(0.0, delay))
            self._timers.pop(key, None)
            async with self.lock(key):
                if self._current_uid(key) == marker[1]:
                    await action(key)

        self._timers[key] = (marker, asyncio.ensure_future(fire()))

    def cancel(self, key: Key) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None and timer[1] is not asyncio.current_task():
            timer[1].cancel()

    def tasks(self) -> list[asyncio.Task[None]]:
        return [task for _, task in self._timers.values()]

    def clear(self) -> None:
        self._timers.clear()
