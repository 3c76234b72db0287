"""The simulated components' event recorders: core/v1 Events written off the hot path, correlated
as client-go's `record.EventRecorder` correlates them.

    recorder = Recorder(api, clock, "kubelet", host="node-0")
    recorder.record(pod, PodEvent("Normal", "Started", "Container started", "spec.containers{w}"))
    spawn(recorder.run())          # the writer
    await recorder.flush()         # every recorded event written (or dropped)

`record` never blocks and never raises: it puts the event on the recorder's queue, as
client-go's broadcaster does (tools/record/event.go `NewBroadcaster`: `maxQueuedEvents` 1000,
`watch.DropIfChannelFull`) — an event that finds the queue full is dropped (logged once a
minute at most). One writer per recorder takes them in order and, with `correlate` (the
kubelet's), runs client-go's EventCorrelator first (tools/record/events_cache.go
`EventCorrelate`, through `kubetrain.kube.eventbudget.EventBudget`):
1. `EventAggregator`: from the 10th distinct message of one (object, type, reason) within
   10 minutes on, one Event "(combined from similar events): <message>";
2. `eventLogger.eventObserve`: an event seen before (same object, fieldPath, type, reason,
   message; the last 4096 kept) is the same Event again: its `count` goes up by one — counted
   even when the next step skips it — and the write is a PATCH of `count`, `lastTimestamp` and
   `message` to the Event of that name (`recordEvent`; if that Event is gone, 404, it is created
   again under its name);
3. `EventSourceObjectSpamFilter`: a token bucket per (object, type) — client-go 1.36's
   `getSpamKey` — of 25, refilled one every 5 minutes; an event without a token is not written.
Off the hot path: a write first waits for a pause in the simulator's pod work (`Activity`:
no reconcile or status write in flight and no pod watch event for QUIET = 50 ms; at most
MAX_DEFER = 2 real seconds per write), so a wave of pod
starts is not slowed by its Events — they are written between and after its steps, which may
be seconds after the fact on a busy simulator (their timestamps are when they happened, as
client-go stamps an Event before queueing it).
Each write then waits for the recorder's client rate limit: `qps` 50 and `burst` 100, the
kubelet's `eventRecordQPS`/`eventBurst` defaults (kube-scheduler's event client has its
connection's 50/100 too), on the injected clock. A failed write is logged and not retried
(client-go tries 12 times, 10 s apart: `recordToSink`); one refused because the Event exists or
its namespace is being terminated only at debug level, as client-go's.

The body is client-go's `makeEvent`: named `<object>.<hex unix nanoseconds>` (kept unique
across the process's recorders when their clock stands still or they share an instant),
`involvedObject` with the object's apiVersion, kind, namespace, name, uid, resourceVersion and
the event's fieldPath, `source` {component, host}, `reportingComponent` the component and
`reportingInstance` the host (the component when there is no host).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.kubelet.podevents import PodEvent
from kubetrain.devcluster.kubelet.podstatus import timestamp
from kubetrain.kube.clock import Clock
from kubetrain.kube.eventbudget import CACHE_SIZE, EventBudget, object_id

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MAX_QUEUED = 1000  # client-go's maxQueuedEvents
QPS, BURST = 50.0, 100  # KubeletConfiguration eventRecordQPS / eventBurst defaults
DROP_LOG_INTERVAL = 60.0
MAX_DEFER = 2.0  # real seconds a write waits at most for the simulator's pod work to pause
QUIET = 0.05  # real seconds without pod work that count as a pause
NAMESPACE_TERMINATING = "NamespaceTerminating"  # v1.NamespaceTerminatingCause
SMP = "application/strategic-merge-patch+json"  # client-go's EventSinkImpl.Patch


@dataclass
class _Queued:
    obj: Obj
    event: PodEvent
    action: str
    at: datetime  # when it happened (client-go's makeEvent stamps it before queueing)
    nanos: int  # its name's: unique, in the order recorded


@dataclass
class _Observed:
    name: str
    count: int
    first: str


def quietly_refused(code: int, body: Any) -> bool:
    """A refusal client-go's recorder logs at V(5) only (tools/record/event.go `recordEvent`):
    the Event exists already (409), or its namespace is being terminated (the cause
    `NamespaceTerminating`)."""
    if code == 409:
        return True
    details = body.get("details") if isinstance(body, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    return any(isinstance(c, dict) and c.get("reason") == NAMESPACE_TERMINATING for c in causes or ())


class Activity:
    """The pod simulator's work: a pod's reconcile or status write in flight, or a pod watch event
    just seen (`touch`). The recorders' writers wait until none is in flight and none happened
    for QUIET seconds — at most MAX_DEFER seconds per write — so that Event writes take the room
    between pod steps and waves (the pods the operator creates, their binding and starts), never
    a pod step's. Real time (the process's), not the simulated clock: it paces this process's
    own work and measures no simulated duration."""

    def __init__(self) -> None:
        self._busy = 0
        self._last = float("-inf")

    def touch(self) -> None:
        self._last = time.monotonic()

    @contextmanager
    def working(self) -> Iterator[None]:
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1
            self.touch()

    async def idle(self) -> None:
        """Until nothing is in flight and nothing happened for QUIET seconds, or MAX_DEFER
        seconds have passed. It looks again every QUIET seconds at most (a plain sleep: no
        `asyncio.wait_for`, which on Python 3.11 can swallow the writer's cancellation when the
        awaited event is set at the same moment)."""
        deadline = time.monotonic() + MAX_DEFER
        while (now := time.monotonic()) < deadline:
            quiet = now - self._last
            if not self._busy and quiet >= QUIET:
                return
            await asyncio.sleep(min(QUIET if self._busy else QUIET - quiet, deadline - now))


class Recorder:
    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        component: str,
        *,
        host: str = "",
        correlate: bool = True,
        qps: float = QPS,
        burst: int = BURST,
        max_queued: int = MAX_QUEUED,
        activity: Activity | None = None,
    ) -> None:
        if qps <= 0 or burst < 1 or max_queued < 1:
            raise ValueError(f"event recorder {component}: qps must be > 0, burst and max_queued >= 1")
        self._api, self.clock = api, clock
        self.component, self.host = component, host
        self.correlate = correlate
        self._activity = activity or Activity()
        self.qps, self.burst = qps, burst
        self._queue: asyncio.Queue[_Queued] = asyncio.Queue(max_queued)
        self._budget = EventBudget(clock)
        self._observed: OrderedDict[tuple[str, ...], _Observed] = OrderedDict()
        self._tokens, self._refilled = float(burst), clock.monotonic()
        self.dropped = 0  # events the full queue refused
        self._unlogged, self._logged_at = 0, float("-inf")

    def record(self, obj: Obj, event: PodEvent, action: str = "") -> None:
        """Queue an Event about `obj`; dropped (and counted) when the queue is full."""
        try:
            at = self.clock.now()
            self._queue.put_nowait(_Queued(obj, event, action, at, _unique_nanos(at)))
        except asyncio.QueueFull:
            self.dropped += 1
            self._unlogged += 1
            now = self.clock.monotonic()
            if now - self._logged_at >= DROP_LOG_INTERVAL:  # once a minute at most
                meta = obj.get("metadata") or {}
                log.warning(
                    "%s: %d event(s) dropped, %d waiting to be written (the latest: %s %s on %s/%s)",
                    self.component,
                    self._unlogged,
                    self._queue.qsize(),
                    event.type,
                    event.reason,
                    meta.get("namespace"),
                    meta.get("name"),
                )
                self._unlogged, self._logged_at = 0, now

    async def flush(self) -> None:
        """Wait until every queued event has been written (or failed). Needs `run` running."""
        await self._queue.join()

    async def run(self) -> None:
        """The writer: each queued event in turn, until cancelled."""
        while True:
            item = await self._queue.get()
            try:
                await self._activity.idle()
                await self._write(item)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # best-effort, as client-go's recorder: logged, not retried
                meta = item.obj.get("metadata") or {}
                log.warning(
                    "%s: could not record %s event %s on %s/%s: %s",
                    self.component,
                    item.event.type,
                    item.event.reason,
                    meta.get("namespace"),
                    meta.get("name"),
                    err,
                )
            finally:
                self._queue.task_done()

    async def _write(self, item: _Queued) -> None:
        body, patch = self.correlated(item.obj, item.event, item.action, (item.at, item.nanos))
        if body is None:
            return
        await self._take_token()
        path = f"/api/v1/namespaces/{body['metadata']['namespace']}/events"
        await write_event(self._api(), path, body, patch, self.component)

    def correlated(
        self, obj: Obj, event: PodEvent, action: str = "", stamp: tuple[datetime, int] | None = None
    ) -> tuple[Obj | None, Obj | None]:
        """The Event to write and, when it repeats one, the patch that records the repeat; (None,
        None) when the spam filter skips it. Pure but for the correlator's caches."""
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        if stamp is None:
            at = self.clock.now()
            stamp = at, _unique_nanos(at)
        now = timestamp(stamp[0])
        body = self._body(obj, event, namespace, now, stamp[1], action)
        if not self.correlate:
            return body, None
        obj_id = object_id(obj, kind="Pod", api_version="v1")
        message, combined = self._budget.aggregate(obj_id, event.type, event.reason, event.message)
        body["message"] = message
        similar = ("",) if combined else (event.field_path, message)
        key: tuple[str, ...] = (*obj_id, event.type, event.reason, *similar)
        seen = self._observed.get(key)
        patch = None
        if seen is not None:
            seen.count += 1
            body["metadata"]["name"] = seen.name
            body.update(count=seen.count, firstTimestamp=seen.first)
            patch = {"count": seen.count, "lastTimestamp": now, "message": message}
        else:
            seen = _Observed(body["metadata"]["name"], 1, now)
        self._observed[key] = seen
        self._observed.move_to_end(key)
        while len(self._observed) > CACHE_SIZE:
            self._observed.popitem(last=False)
        if not self._budget.allow((*obj_id, event.type)):
            return None, None
        return body, patch

    def _body(self, obj: Obj, event: PodEvent, namespace: str, now: str, nanos: int, action: str) -> Obj:
        meta = obj.get("metadata") or {}
        involved = object_reference(obj, event.field_path)
        source = {"component": self.component, **({"host": self.host} if self.host else {})}
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name')}.{nanos:x}", "namespace": namespace},
            "involvedObject": involved,
            "reason": event.reason,
            "message": event.message,
            "type": event.type,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": source,
            "reportingComponent": self.component,
            "reportingInstance": self.host or self.component,
        }
        if action:
            body["action"] = action
        return body

    async def _take_token(self) -> None:
        """The client's rate limit (flowcontrol's token bucket): wait for a token."""
        while True:
            now = self.clock.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._refilled) * self.qps)
            self._refilled = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
            await self.clock.sleep((1.0 - self._tokens) / self.qps)


_last_nanos = 0


def _unique_nanos(when: datetime) -> int:
    """Unix nanoseconds of `when`, above any this process named an Event with before: the
    names' order is the order the events were recorded in."""
    global _last_nanos
    _last_nanos = max(int(when.timestamp() * 1e9), _last_nanos + 1)
    return _last_nanos


async def write_event(api: RawApi, path: str, body: Obj, patch: Obj | None, component: str) -> None:
    """Write one Event into the collection at `path`: with `patch`, a strategic merge patch of
    the Event already written (created again from `body` when it is gone, a 404), else a create.
    A create the API server refuses for a terminating namespace is dropped quietly, as
    client-go's recorders drop it; any other refusal is raised."""
    if patch is not None:
        code, written = await api.request(
            "PATCH", f"{path}/{body['metadata']['name']}", body=patch, content_type=SMP
        )
        if code == 200:
            return
        if code != 404:
            raise ApiError(code, written)
    code, written = await api.request("POST", path, body=body)
    if code == 201:
        return
    if quietly_refused(code, written):
        log.debug("%s: %s event %s not recorded: %s", component, body["type"], body["reason"], written)
        return
    raise ApiError(code, written)


def object_reference(obj: Obj, field_path: str = "") -> Obj:
    """client-go's `reference.GetReference` of `obj` (a pod by default): its apiVersion, kind,
    namespace, name, uid and resourceVersion, and `fieldPath` when given — an Event's
    `involvedObject` (core/v1) or `regarding` (events.k8s.io/v1)."""
    meta = obj.get("metadata") or {}
    ref: Obj = {"apiVersion": obj.get("apiVersion") or "v1", "kind": obj.get("kind") or "Pod"}
    for field in ("namespace", "name", "uid", "resourceVersion"):
        if meta.get(field):
            ref[field] = meta[field]
    if field_path:
        ref["fieldPath"] = field_path
    return ref
