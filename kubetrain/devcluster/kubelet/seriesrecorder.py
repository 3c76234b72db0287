"""kube-scheduler's event recorder: events.k8s.io/v1 Events through client-go's tools/events
library (event_recorder.go, event_broadcaster.go), as kube-scheduler records `Scheduled` and
`FailedScheduling`.

    recorder = SeriesRecorder(api, clock, "default-scheduler")
    recorder.record(pod, PodEvent("Warning", "FailedScheduling", message), action="Scheduling")

The Event is `makeEvent`'s: named `<pod>.<hex unix nanoseconds>` in the pod's namespace,
`eventTime` when it happened (MicroTime), `reportingController` the scheduler's name,
`reportingInstance` `<name>-<hostname>` (`NewRecorder`: os.Hostname), `action`, `reason`,
`type`, `note` the message and `regarding` the pod's reference as the scheduler saw it
(apiVersion, kind, namespace, name, uid and resourceVersion).

Repeats fold into a series by the library's rules (`SeriesCache`, `recordToSink`): an Event
isomorphic to one in the cache — same type, action, reason, reporting controller and
instance, regarding (the whole reference, resourceVersion included) and related; the note does
not count — is not a new Event. Its first repeat gives the cached Event `series` {count 2,
lastObservedTime now} and is written at once, a strategic merge patch of `series` on
events.k8s.io/v1 (created again under its name if it is gone, 404); further repeats only count
in the cache (count + 1, lastObservedTime now). Every 30 minutes (`refreshTime`) each cached
series is written again (its count so far, and a fresh TTL), and every 6 minutes
(`finishTime`) a series not observed for 6 minutes is written a last time and forgotten, a
singleton whose eventTime is 6 minutes old is forgotten — so the cache holds at most the last
6 minutes' Events. The periods run on the injected clock.

The writes share the component recorder's queue, writer, rate limit and wait for a pause in
the pod work (recorder.py); a repeat that is only counted queues nothing. **Limits:** a failed
write is logged and not retried (client-go tries 12 times, 10 s apart; a series create that
finds the Event exists would be retried); no spam filter or aggregation, as the library has
none.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet.podevents import PodEvent
from kubetrain.devcluster.kubelet.recorder import (
    Activity,
    Recorder,
    _Queued,
    _unique_nanos,
    object_reference,
    write_event,
)
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]
FINISH_SECONDS = 6 * 60.0  # finishTime
REFRESH_SECONDS = 30 * 60.0  # refreshTime
API_VERSION = "events.k8s.io/v1"
_REFERENCE = ("apiVersion", "kind", "namespace", "name", "uid", "resourceVersion", "fieldPath")


def micro_time(when: datetime) -> str:
    """metav1.MicroTime as JSON: RFC 3339 with microseconds, UTC."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _reference(ref: Any) -> tuple[str, ...]:
    ref = ref if isinstance(ref, dict) else {}
    return tuple(str(ref.get(field) or "") for field in _REFERENCE)


def event_key(event: Obj) -> tuple[Any, ...]:
    """tools/events `getKey`: what makes two Events isomorphic (the note is not part of it)."""
    return (
        event.get("type"),
        event.get("action"),
        event.get("reason"),
        event.get("reportingController"),
        event.get("reportingInstance"),
        _reference(event.get("regarding")),
        _reference(event.get("related")),
    )


class SeriesCache:
    """The broadcaster's `eventCache` and its decisions; pure (times are given)."""

    def __init__(self) -> None:
        self._events: dict[tuple[Any, ...], Obj] = {}

    def __len__(self) -> int:
        return len(self._events)

    def observe(self, event: Obj, now: datetime) -> Obj | None:
        """`recordToSink`: the Event to write for this occurrence — itself when new, the cached
        one with its new series at the first repeat — or None (a further repeat, counted)."""
        key = event_key(event)
        cached = self._events.get(key)
        if cached is None:
            self._events[key] = event
            return copy.deepcopy(event)
        series = cached.get("series")
        if isinstance(series, dict):
            series["count"] = int(series.get("count") or 0) + 1
            series["lastObservedTime"] = micro_time(now)
            return None
        cached["series"] = {"count": 2, "lastObservedTime": micro_time(now)}
        return copy.deepcopy(cached)

    def refresh(self) -> list[Obj]:
        """`refreshExistingEventSeries`: every cached series, to write again."""
        return [copy.deepcopy(e) for e in self._events.values() if isinstance(e.get("series"), dict)]

    def finish(self, now: datetime) -> list[Obj]:
        """`finishSeries`: the series not observed for FINISH_SECONDS, to write a last time, and
        forgotten with the singletons as old."""
        cutoff = now - timedelta(seconds=FINISH_SECONDS)
        last: list[Obj] = []
        for key, event in list(self._events.items()):
            series = event.get("series")
            if isinstance(series, dict):
                if _parse(str(series["lastObservedTime"])) < cutoff:
                    last.append(copy.deepcopy(event))
                    del self._events[key]
            elif _parse(str(event["eventTime"])) < cutoff:
                del self._events[key]
        return last


class SeriesRecorder(Recorder):
    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        controller: str,
        *,
        hostname: str | None = None,
        activity: Activity | None = None,
    ) -> None:
        super().__init__(api, clock, controller, correlate=False, activity=activity)
        self.instance = f"{controller}-{hostname if hostname is not None else socket.gethostname()}"
        self.series = SeriesCache()

    def record(self, obj: Obj, event: PodEvent, action: str = "") -> None:
        """The occurrence goes through the series cache at once; what it says to write is queued."""
        at = self.clock.now()
        body = self.series.observe(self.make_event(obj, event, action, at, _unique_nanos(at)), at)
        if body is not None:
            super().record(body, event, action)

    def make_event(self, obj: Obj, event: PodEvent, action: str, at: datetime, nanos: int) -> Obj:
        """`makeEvent` for `obj` (reference.GetReference: its apiVersion, kind and metadata)."""
        meta = obj.get("metadata") or {}
        regarding = object_reference(obj, event.field_path)
        body: Obj = {
            "apiVersion": API_VERSION,
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name')}.{nanos:x}",
                "namespace": meta.get("namespace") or "default",
            },
            "eventTime": micro_time(at),
            "reportingController": self.component,
            "reportingInstance": self.instance,
            "action": action,
            "reason": event.reason,
            "regarding": regarding,
            "note": event.message,
            "type": event.type,
        }
        return body

    async def run(self) -> None:
        """The writer and the series' periodic writes, until cancelled."""
        await asyncio.gather(super().run(), self._periodic())

    async def _periodic(self) -> None:
        ticks = 0
        while True:
            await self.clock.sleep(FINISH_SECONDS)
            ticks += 1
            due = self.series.finish(self.clock.now())
            if ticks % round(REFRESH_SECONDS / FINISH_SECONDS) == 0:
                due += self.series.refresh()
            for body in due:
                try:
                    await self._send(body)
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # logged, not retried
                    log.warning(
                        "%s: could not write the series of %s: %s", self.component, body["reason"], err
                    )

    async def _write(self, item: _Queued) -> None:
        await self._send(item.obj)

    async def _send(self, body: Obj) -> None:
        """`recordEvent`: a series is a patch of `series` (created when the Event is gone), any
        other Event a create."""
        await self._take_token()
        path = f"/apis/{API_VERSION}/namespaces/{body['metadata']['namespace']}/events"
        patch = {"series": body["series"]} if isinstance(body.get("series"), dict) else None
        await write_event(self._api(), path, body, patch, self.component)
