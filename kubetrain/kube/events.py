"""EventRecorder: core/v1 Events about an object, aggregated like client-go's recorder.

    recorder = EventRecorder(client)                  # component "kubetrain-operator"
    await recorder.event(job, "Normal", "SuccessfulCreatePod", "Created pod j-worker-0")
    recorder.emit(job, "Warning", "FailedCreatePod", msg)   # fire-and-forget (a background task)
    await recorder.flush()                            # wait for emitted events (tests, shutdown)

- The Event lives in the involved object's namespace ("default" for cluster-scoped objects) and
  is named `<object name>.<hex nanoseconds>`; `involvedObject` carries apiVersion, kind,
  namespace, name, uid and resourceVersion; `source.component` / `reportingComponent` is the
  component, `source.host` / `reportingInstance` the host name.
- Aggregation: the same (object uid, type, reason, message) again bumps `count` and
  `lastTimestamp` of the existing Event with a merge patch instead of creating a new object
  (if that Event has meanwhile expired — 404 — a new one is created). The last `cache_size`
  distinct events are remembered.
- It never raises into the caller: failures are logged (an Event is best-effort).
Messages longer than 1024 characters are truncated (the events.k8s.io limit).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubetrain.kube import requesttimes
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.resources import EVENTS

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MAX_MESSAGE = 1024
EVENT_TYPES = ("Normal", "Warning")


def rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Seen:
    namespace: str
    name: str
    count: int


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        component: str = "kubetrain-operator",
        *,
        host: str | None = None,
        cache_size: int = 4096,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self.cache_size = cache_size
        self._clock = clock or SYSTEM_CLOCK
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._locks: dict[tuple[str, ...], tuple[asyncio.Lock, list[int]]] = {}  # key -> (lock, [users])
        self._pending: set[asyncio.Task[None]] = set()
        self._last_nanos = 0

    def emit(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record in the background; never blocks, never raises."""
        try:
            task = asyncio.get_running_loop().create_task(
                self.event(obj, type_, reason, message), context=requesttimes.detached()
            )  # in the background: not a request of the reconcile that emitted it
        except RuntimeError:
            log.warning("event %s/%s dropped: no running event loop", reason, message)
            return
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def flush(self) -> None:
        """Wait until every emitted event has been written (or failed)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record an Event about `obj` now; logs (never raises) on failure."""
        try:
            await self._record(obj, type_, reason, message)
        except Exception as err:
            meta = obj.get("metadata") or {}
            log.warning(
                "could not record %s event %s on %s %s/%s: %s",
                type_,
                reason,
                obj.get("kind"),
                meta.get("namespace"),
                meta.get("name"),
                err,
            )

    async def _record(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        if type_ not in EVENT_TYPES:
            raise ValueError(f"event type must be Normal or Warning, not {type_!r}")
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 3] + "..."
        key = (
            str(meta.get("uid") or ""),
            str(obj.get("kind") or ""),
            namespace,
            str(meta.get("name") or ""),
            type_,
            reason,
            message,
        )
        # identical events are serialised, so that the second one bumps the first
        lock, users = self._locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                now = self._clock.now()
                seen = self._seen.get(key)
                if seen is not None and await self._bump(seen, now):
                    self._seen.move_to_end(key)
                    return
                created = await self.client.create(
                    EVENTS, self._new_event(obj, namespace, type_, reason, message, now)
                )
                created_meta = created.get("metadata") or {}
                self._seen[key] = _Seen(
                    created_meta.get("namespace") or namespace,
                    created_meta.get("name") or "",
                    int(created.get("count") or 1),
                )
                self._seen.move_to_end(key)
                while len(self._seen) > self.cache_size:
                    self._seen.popitem(last=False)
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[key]

    async def _bump(self, seen: _Seen, now: datetime) -> bool:
        """Patch count/lastTimestamp of an Event we created; False if it is gone."""
        patch = {"count": seen.count + 1, "lastTimestamp": rfc3339(now)}
        try:
            patched = await self.client.patch(EVENTS, seen.namespace, seen.name, patch)
        except ApiError as err:
            if err.is_not_found:
                return False
            raise
        seen.count = int(patched.get("count") or seen.count + 1)
        return True

    def _new_event(
        self, obj: Obj, namespace: str, type_: str, reason: str, message: str, now: datetime
    ) -> Obj:
        meta = obj.get("metadata") or {}
        involved: Obj = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
        }
        if meta.get("namespace"):
            involved["namespace"] = meta["namespace"]
        if meta.get("uid"):
            involved["uid"] = meta["uid"]
        if meta.get("resourceVersion"):
            involved["resourceVersion"] = meta["resourceVersion"]
        # Unique per recorder even when the clock stands still (a fake clock, a coarse one): two
        # events on one object in the same instant must not collide on the name.
        nanos = self._last_nanos = max(int(now.timestamp() * 1e9), self._last_nanos + 1)
        stamp = rfc3339(now)
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name', 'unknown')}.{nanos:x}", "namespace": namespace},
            "involvedObject": involved,
            "type": type_,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
