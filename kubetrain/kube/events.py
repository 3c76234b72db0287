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
- Budgeted events (`emit(..., budgeted=True)`: the per-pod ones, `operator/podevents.py`) go
  through client-go's EventCorrelator (`kubetrain.kube.eventbudget`): similar ones are combined
  and each object has a budget of 25 writes refilled one per 5 minutes; an event over budget is
  not written, but counts toward the `count` of the Event it would have bumped. Budgeted
  events are written one at a time. The other events take nothing from that budget, so
  per-pod events never crowd them out.
- It never raises into the caller: failures are logged (an Event is best-effort) — as a
  warning, but an Event the server refuses as already existing or because its namespace is
  being terminated, which client-go's recorder drops quietly (`recordEvent`, V(5)): a
  namespace's deletion does not fill the log.
- Pending background writes are bounded, as client-go's broadcaster queue is
  (tools/record/event.go `NewBroadcaster`: `maxQueuedEvents` 1000, `watch.DropIfChannelFull`;
  `generateEvent` drops what `ActionOrDrop` cannot queue): with `max_pending` (1000) emitted
  events not yet written — the API server slow or unavailable — another one is dropped before
  anything is made for it, counted in `kubetrain_events_dropped_total{reason="queue_full"}`,
  and logged once a minute at most (client-go logs each one). Budgeted events are dropped from
  half of the bound on, so per-pod events never take the room of a job's own (its Failed or
  Succeeded Event, a FailedCreatePod warning). `event()` is awaited by its caller and not
  counted. Nothing is retried here: a write is one request, which the transport bounds (its
  request timeout; a 429 retried at most 3 times), where client-go sleeps 10 s between up to
  12 tries (`recordToSink`, `maxTriesPerEvent`).
- Every write takes its token from the client's Event bucket (`event_limiter`, the same
  `--qps`/`--burst` as its own; `kubetrain.kube.transport.event_writes`), as controller-runtime's
  recorder has its own REST client and client-go rate limiter: Events never delay the pod
  creates of the same client, and a wave of pod creates never delays an Event. From one client
  the API server therefore sees up to twice `qps` (its requests and its Events).
Messages longer than 1024 characters are truncated (the events.k8s.io limit).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubetrain.kube import requesttimes
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.eventbudget import EventBudget, object_id
from kubetrain.kube.resources import EVENTS
from kubetrain.kube.transport import event_writes
from kubetrain.serving.metrics import EVENTS_DROPPED

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MAX_MESSAGE = 1024
NAMESPACE_TERMINATING = "NamespaceTerminating"  # v1.NamespaceTerminatingCause
EVENT_TYPES = ("Normal", "Warning")
MAX_PENDING = 1000  # client-go's maxQueuedEvents (tools/record/event.go)
DROP_LOG_INTERVAL = 60.0  # seconds between two "events dropped" warnings
_QUEUE_FULL = EVENTS_DROPPED.labels(reason="queue_full")


def quietly_refused(err: ApiError) -> bool:
    """An Event refusal client-go's recorder logs at V(5) only (tools/record/event.go
    `recordEvent`: `IsAlreadyExists`, or `HasStatusCause(err, NamespaceTerminatingCause)`)."""
    if err.is_already_exists:
        return True
    details = err.body.get("details") if isinstance(err.body, Mapping) else None
    causes = details.get("causes") if isinstance(details, Mapping) else None
    return any(isinstance(c, Mapping) and c.get("reason") == NAMESPACE_TERMINATING for c in causes or ())


def rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Event:
    """One Event to write: where, what, and its de-duplication key."""

    namespace: str
    type: str
    reason: str
    message: str
    key: tuple[str, ...]
    combined: bool  # the combined Event of similar ones (eventbudget.py): its message is patched too
    budgeted: bool


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
        max_pending: int = MAX_PENDING,
    ) -> None:
        if max_pending < 2:
            raise ValueError(f"EventRecorder max_pending must be an integer >= 2, not {max_pending!r}")
        self.client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self.cache_size = cache_size
        self._clock = clock or SYSTEM_CLOCK
        self.budget = EventBudget(self._clock)
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._dropped: OrderedDict[tuple[str, ...], int] = OrderedDict()  # key -> occurrences not written
        self._locks: dict[tuple[str, ...], tuple[asyncio.Lock, list[int]]] = {}  # key -> (lock, [users])
        self._pending: set[asyncio.Task[None]] = set()
        self._one_budgeted = asyncio.Lock()  # budgeted events are written one at a time
        self._last_nanos = 0
        self.max_pending = max_pending
        self._unlogged_drops = 0  # dropped (queue full) since the last warning
        self._drop_logged_at: float | None = None

    @property
    def pending(self) -> int:
        """Emitted events not yet written (or failed): at most `max_pending`."""
        return len(self._pending)

    def emit(self, obj: Obj, type_: str, reason: str, message: str, *, budgeted: bool = False) -> None:
        """Record in the background; never blocks, never raises. An event beyond the bound of
        pending writes (half of it for a budgeted one), or a budgeted event over its object's
        budget, is dropped here, before any task is made for it."""
        if len(self._pending) >= (self.max_pending // 2 if budgeted else self.max_pending):
            self._queue_full(obj, type_, reason)
            return
        event = self._prepare(obj, type_, reason, message, budgeted)
        if event is None:
            return
        try:
            task = asyncio.get_running_loop().create_task(
                self._write(obj, event), context=requesttimes.detached()
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

    async def event(self, obj: Obj, type_: str, reason: str, message: str, *, budgeted: bool = False) -> None:
        """Record an Event about `obj` now (a budgeted one within its object's budget); logs
        (never raises) on failure."""
        event = self._prepare(obj, type_, reason, message, budgeted)
        if event is not None:
            await self._write(obj, event)

    def _prepare(self, obj: Obj, type_: str, reason: str, message: str, budgeted: bool) -> _Event | None:
        """The Event to write; None when it is invalid (logged) or over budget."""
        try:
            return self._decide(obj, type_, reason, message, budgeted)
        except Exception as err:  # a malformed object: best-effort, like a failed write
            self._failed(obj, type_, reason, err)
            return None

    def _decide(self, obj: Obj, type_: str, reason: str, message: str, budgeted: bool) -> _Event | None:
        if type_ not in EVENT_TYPES:
            self._failed(obj, type_, reason, f"event type must be Normal or Warning, not {type_!r}")
            return None
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        obj_id = object_id(obj)
        combined = False
        if budgeted:
            message, combined = self.budget.aggregate(obj_id, type_, reason, message)
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 3] + "..."
        # The combined Event of a (type, reason) is one object, whatever its latest message.
        key = (*obj_id[:4], type_, reason, "" if combined else message, "combined" if combined else "")
        if budgeted and not self.budget.allow(obj_id):
            # Counted all the same, as client-go's eventLogger counts it: the next write says so.
            self._dropped[key] = self._dropped.pop(key, 0) + 1
            while len(self._dropped) > self.cache_size:
                self._dropped.popitem(last=False)
            return None
        return _Event(namespace, type_, reason, message, key, combined, budgeted)

    def _queue_full(self, obj: Obj, type_: str, reason: str) -> None:
        _QUEUE_FULL.inc()
        self._unlogged_drops += 1
        now = self._clock.monotonic()
        if self._drop_logged_at is not None and now - self._drop_logged_at < DROP_LOG_INTERVAL:
            return
        meta = obj.get("metadata") or {}
        log.warning(
            "%d event(s) dropped: %d Event writes pending, at most %d (half of it for per-pod "
            "events); the API server is slow or unavailable. The latest: %s %s on %s %s/%s",
            self._unlogged_drops,
            len(self._pending),
            self.max_pending,
            type_,
            reason,
            obj.get("kind"),
            meta.get("namespace"),
            meta.get("name"),
        )
        self._unlogged_drops = 0
        self._drop_logged_at = now

    def _failed(self, obj: Obj, type_: str, reason: str, err: object) -> None:
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

    async def _write(self, obj: Obj, event: _Event) -> None:
        with event_writes():  # the Event bucket, not the pod creates'
            await self._write_limited(obj, event)

    async def _write_limited(self, obj: Obj, event: _Event) -> None:
        try:
            if event.budgeted:
                # One at a time, as client-go's recorder writes each event in turn: a burst of
                # them beside a wave of pod creates takes one more connection, not one per event.
                async with self._one_budgeted:
                    await self._record(obj, event)
            else:
                await self._record(obj, event)
        except ApiError as err:
            if not quietly_refused(err):
                self._failed(obj, event.type, event.reason, err)
            else:
                log.debug(
                    "%s event %s on %s not recorded: %s", event.type, event.reason, obj.get("kind"), err
                )
        except Exception as err:
            self._failed(obj, event.type, event.reason, err)

    async def _record(self, obj: Obj, event: _Event) -> None:
        key, namespace = event.key, event.namespace
        # identical events are serialised, so that the second one bumps the first
        lock, users = self._locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                now = self._clock.now()
                seen = self._seen.get(key)
                extra = self._dropped.pop(key, 0)
                if seen is not None and await self._bump(
                    seen, now, 1 + extra, event.message if event.combined else None
                ):
                    self._seen.move_to_end(key)
                    return
                body = self._new_event(obj, namespace, event.type, event.reason, event.message, now)
                body["count"] += extra
                created = await self.client.create(EVENTS, body)
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

    async def _bump(self, seen: _Seen, now: datetime, times: int, message: str | None) -> bool:
        """Add `times` to the count of an Event we created, with its lastTimestamp (and the
        message of a combined Event); False if it is gone."""
        patch: Obj = {"count": seen.count + times, "lastTimestamp": rfc3339(now)}
        if message is not None:
            patch["message"] = message
        try:
            patched = await self.client.patch(EVENTS, seen.namespace, seen.name, patch)
        except ApiError as err:
            if err.is_not_found:
                return False
            raise
        seen.count = int(patched.get("count") or seen.count + times)
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
