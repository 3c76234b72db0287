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
Each write then waits for the recorder's client rate limit: `qps` 50 and `burst` 100, the
kubelet's `eventRecordQPS`/`eventBurst` defaults (kube-scheduler's event client has its
connection's 50/100 too), on the injected clock. A failed write is logged and not retried
(client-go tries 12 times, 10 s apart: `recordToSink`).

The body is client-go's `makeEvent`: named `<object>.<hex unix nanoseconds>` (kept unique
across the process's recorders when their clock stands still or they share an instant),
`involvedObject` with the object's apiVersion, kind, namespace, name, uid, resourceVersion and
the event's fieldPath, `source` {component, host}, `reportingComponent` the component and
`reportingInstance` the host (the component when there is no host).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.kubelet.podevents import PodEvent
from kubetrain.devcluster.kubelet.podstatus import timestamp
from kubetrain.kube.clock import Clock
from kubetrain.kube.eventbudget import CACHE_SIZE, EventBudget

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MAX_QUEUED = 1000  # client-go's maxQueuedEvents
QPS, BURST = 50.0, 100  # KubeletConfiguration eventRecordQPS / eventBurst defaults
DROP_LOG_INTERVAL = 60.0
SMP = "application/strategic-merge-patch+json"  # client-go's EventSinkImpl.Patch


@dataclass
class _Queued:
    obj: Obj
    event: PodEvent
    action: str


@dataclass
class _Observed:
    name: str
    count: int
    first: str


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
    ) -> None:
        if qps <= 0 or burst < 1 or max_queued < 1:
            raise ValueError(f"event recorder {component}: qps must be > 0, burst and max_queued >= 1")
        self._api, self.clock = api, clock
        self.component, self.host = component, host
        self.correlate = correlate
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
            self._queue.put_nowait(_Queued(obj, event, action))
        except asyncio.QueueFull:
            self.dropped += 1
            self._unlogged += 1
            now = self.clock.monotonic()
            if now - self._logged_at >= DROP_LOG_INTERVAL:
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
        body, patch = self.correlated(item.obj, item.event, item.action)
        if body is None:
            return
        await self._take_token()
        api, namespace, name = self._api(), body["metadata"]["namespace"], body["metadata"]["name"]
        path = f"/api/v1/namespaces/{namespace}/events"
        if patch is not None:
            code, written = await api.request("PATCH", f"{path}/{name}", body=patch, content_type=SMP)
            if code != 404:
                if code != 200:
                    raise ApiError(code, written)
                return
        code, written = await api.request("POST", path, body=body)
        if code not in (201, 409):  # 409: already there (client-go drops it quietly)
            raise ApiError(code, written)

    def correlated(self, obj: Obj, event: PodEvent, action: str = "") -> tuple[Obj | None, Obj | None]:
        """The Event to write and, when it repeats one, the patch that records the repeat; (None,
        None) when the spam filter skips it. Pure but for the correlator's caches."""
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        now = timestamp(self.clock.now())
        body = self._body(obj, event, namespace, now, action)
        if not self.correlate:
            return body, None
        obj_id = (
            str(meta.get("uid") or ""),
            str(obj.get("kind") or "Pod"),
            namespace,
            str(meta.get("name") or ""),
            str(obj.get("apiVersion") or "v1"),
        )
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

    def _body(self, obj: Obj, event: PodEvent, namespace: str, now: str, action: str) -> Obj:
        meta = obj.get("metadata") or {}
        involved: Obj = {"apiVersion": obj.get("apiVersion") or "v1", "kind": obj.get("kind") or "Pod"}
        for field in ("namespace", "name", "uid", "resourceVersion"):
            if meta.get(field):
                involved[field] = meta[field]
        if event.field_path:
            involved["fieldPath"] = event.field_path
        nanos = _unique_nanos(self.clock.now().timestamp())
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


def _unique_nanos(seconds: float) -> int:
    """Unix nanoseconds of `seconds`, above any this process named an Event with before."""
    global _last_nanos
    _last_nanos = max(int(seconds * 1e9), _last_nanos + 1)
    return _last_nanos
