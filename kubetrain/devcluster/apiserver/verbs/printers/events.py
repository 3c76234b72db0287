"""Events, core/v1 and events.k8s.io/v1 alike: kube-apiserver serves both from one registry
(pkg/registry/core/event) and prints both with `printEvent` (k8s.io/kubernetes
pkg/printers/internalversion/printers.go) after converting an events.k8s.io/v1 Event to the
internal core Event (pkg/apis/events/v1 `Convert_v1_Event_To_core_Event`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.printers.common import col, since

COLUMNS = [
    col("Last Seen"),
    col("Type"),
    col("Reason"),
    col("Object"),
    col("Subobject", priority=1),
    col("Source", priority=1),
    col("Message"),
    col("First Seen", priority=1),
    col("Count", priority=1),
    col("Name", priority=1, fmt="name"),
]


def row(obj: Obj, now: datetime) -> list[Any]:
    """A core/v1 Event's cells in the order of `COLUMNS`, as `printEvent` makes them with Wide
    set, as its table convertor does: first seen falls back to eventTime, last seen to first
    seen, a series' last observed time and count win, and a count of 0 (a singleton of the new
    API) is 1; the object is `lowercase kind/name`; the source is `component, host`, falling back
    to reportingController/reportingInstance (`formatEventSource`)."""
    first = since(obj.get("firstTimestamp") or obj.get("eventTime"), now)
    last = since(obj["lastTimestamp"], now) if obj.get("lastTimestamp") else first
    count = int(obj.get("count") or 0)
    series = obj.get("series")
    if isinstance(series, dict):
        last = since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingController") or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    return [
        last,
        obj.get("type") or "",
        obj.get("reason") or "",
        target,
        involved.get("fieldPath") or "",
        f"{component}, {instance}" if instance else component,
        str(obj.get("message") or "").strip(),
        first,
        count,
        obj["metadata"]["name"],
    ]


# events.k8s.io/v1 field -> core/v1 field (`Convert_v1_Event_To_core_Event`); the others
# (eventTime, series, reason, type, reportingController, reportingInstance, …) keep their names.
_RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}


def as_core_event(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event as the core/v1 Event it is stored as."""
    return {_RENAMED.get(key, key): value for key, value in obj.items()}


def events_k8s_io_row(obj: Obj, now: datetime) -> list[Any]:
    return row(as_core_event(obj), now)
