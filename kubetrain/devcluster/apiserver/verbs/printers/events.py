"""Events, core/v1 and events.k8s.io/v1 alike: kube-apiserver serves both from one registry
(pkg/registry/core/event) and prints both with `printEvent` (k8s.io/kubernetes
pkg/printers/internalversion/printers.go) after converting an events.k8s.io/v1 Event to the
internal core Event (pkg/apis/events/v1 `Convert_v1_Event_To_core_Event`, kinds/eventsv1.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import eventsv1
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
    to the reporting controller (core/v1's `reportingComponent`) and instance
    (`formatEventSource`): an events.k8s.io/v1 Event has no source."""
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
    component = source.get("component") or obj.get("reportingComponent") or ""
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


def events_k8s_io_row(obj: Obj, now: datetime) -> list[Any]:
    """An events.k8s.io/v1 Event's cells: those of the core/v1 Event it is (kinds/eventsv1.py)."""
    return row(eventsv1.to_core(obj), now)
