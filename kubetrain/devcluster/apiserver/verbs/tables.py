"""Server-side printing (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`) as kubectl get asks for it.

Columns: pods NAME READY STATUS RESTARTS AGE (+ IP NODE at priority 1); core/v1 Events LAST SEEN
TYPE REASON OBJECT MESSAGE (+ SUBOBJECT SOURCE, FIRST SEEN COUNT NAME at priority 1: `_event_row`);
custom resources NAME, their additionalPrinterColumns (JSONPaths: fields, indexes, slices, `[*]`,
`==`/`!=` filters; the first match is the cell) and AGE by default; everything else (events.k8s.io/v1
Events too) NAME AGE.
"""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.core import Target


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def human_duration(seconds: float) -> str:
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    return f"{d // 365}y"


def _age(obj: Obj) -> str:
    ts = obj["metadata"].get("creationTimestamp")
    if not ts:
        return "<unknown>"
    when = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return human_duration((datetime.now(UTC) - when).total_seconds())


_SEGMENT = re.compile(
    r"([^.\[\]]+)"  # a field
    r"|\[\?\(@\.([\w.-]+)\s*(==|!=)\s*(?:\"([^\"]*)\"|'([^']*)'|([\w.+-]+))\)\]"  # [?(@.f=="v")]
    r"|\[(\*|-?\d*)(:?)(-?\d*)\]"  # [*], [n], [a:b]
)


def _path(obj: Obj, path: str) -> Any:
    """Evaluate a CRD printer column's JSONPath (`.a.b`, `.a[0]`, `.a[-1:].b`, `.a[*].b`,
    `.a[?(@.status=="True")].type`) as kube-apiserver's table convertor does: of every match,
    the first is the cell (its `results[0][0]`); none is an empty cell."""
    values: list[Any] = [obj]
    for m in _SEGMENT.finditer(path.strip()):
        name, field, op, dquoted, squoted, bare, start, colon, stop = m.groups()
        nxt: list[Any] = []
        for cur in values:
            if name is not None:
                if isinstance(cur, dict) and name in cur:
                    nxt.append(cur[name])
            elif field is not None:
                if isinstance(cur, list):
                    wanted = dquoted if dquoted is not None else squoted if squoted is not None else bare
                    nxt.extend(x for x in cur if _matches(x, field, wanted, op == "=="))
            elif isinstance(cur, list):
                if start == "*":
                    nxt.extend(cur)
                elif colon:
                    nxt.extend(cur[slice(int(start) if start else None, int(stop) if stop else None)])
                elif start:
                    with contextlib.suppress(IndexError):
                        nxt.append(cur[int(start)])
        values = nxt
    return values[0] if values else None


def _matches(item: Any, field: str, wanted: str, equal: bool) -> bool:
    """A filter's test of one list item: its `field` (dotted) compared with `wanted` as text
    (a missing field matches neither == nor !=, as in client-go's jsonpath)."""
    value: Any = item
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    text = value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return (text == wanted) == equal


def _pod_row(obj: Obj) -> list[Any]:
    status = obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len((obj.get("spec") or {}).get("containers") or [])
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in statuses:
        state = c.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state and state["terminated"].get("reason") and reason in ("Running", "Pending"):
            reason = state["terminated"]["reason"]
    if obj["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return [
        obj["metadata"]["name"],
        f"{ready}/{total}",
        reason,
        restarts,
        _age(obj),
        status.get("podIP") or "<none>",
        (obj.get("spec") or {}).get("nodeName") or "<none>",
    ]


def _since(ts: Any, now: datetime) -> str:
    """translateTimestampSince / translateMicroTimestampSince: `<unknown>` for a zero time."""
    if not isinstance(ts, str) or not ts:
        return "<unknown>"
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def _event_row(obj: Obj, now: datetime) -> list[Any]:
    """A core/v1 Event's cells in the order of `_EVENT_COLUMNS`, as kube-apiserver's `printEvent`
    (pkg/printers/internalversion/printers.go) makes them with Wide set, as its table convertor
    does: first seen falls back to eventTime, last seen to first seen, a series' last observed
    time and count win, and a count of 0 (a singleton of the new API) is 1; the object is
    `lowercase kind/name`; the source is `component, host`, falling back to
    reportingController/reportingInstance (`formatEventSource`)."""
    first = _since(obj.get("firstTimestamp") or obj.get("eventTime"), now)
    last = _since(obj["lastTimestamp"], now) if obj.get("lastTimestamp") else first
    count = int(obj.get("count") or 0)
    series = obj.get("series")
    if isinstance(series, dict):
        last = _since(series.get("lastObservedTime"), now)
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


def _col(name: str, typ: str = "string", priority: int = 0, fmt: str = "") -> Obj:
    return {"name": name, "type": typ, "format": fmt, "description": name, "priority": priority}


_EVENT_COLUMNS = [
    _col("Last Seen"),
    _col("Type"),
    _col("Reason"),
    _col("Object"),
    _col("Subobject", priority=1),
    _col("Source", priority=1),
    _col("Message"),
    _col("First Seen", priority=1),
    _col("Count", priority=1),
    _col("Name", priority=1, fmt="name"),
]


def _columns_and_rows(t: Target, items: list[Obj]) -> tuple[list[Obj], list[list[Any]]]:
    if t.rt.key == "pods":
        cols = [
            _col("Name", fmt="name"),
            _col("Ready"),
            _col("Status"),
            _col("Restarts", "string"),
            _col("Age"),
            _col("IP", priority=1),
            _col("Node", priority=1),
        ]
        return cols, [_pod_row(o) for o in items]
    if t.rt.key == "events":
        now = datetime.now(UTC)
        return _EVENT_COLUMNS, [_event_row(o, now) for o in items]
    if t.rt.custom and t.rt.printer_columns:
        extra = t.rt.printer_columns
        cols = [_col("Name", fmt="name")] + [
            _col(c["name"], c.get("type", "string"), c.get("priority", 0)) for c in extra
        ]
        rows = []
        for o in items:
            row: list[Any] = [o["metadata"]["name"]]
            for c in extra:
                value = _path(o, c.get("jsonPath", ""))
                if c.get("type") == "date" and isinstance(value, str):
                    try:
                        when = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
                        value = human_duration((datetime.now(UTC) - when).total_seconds())
                    except ValueError:
                        pass
                row.append(value if value is not None else None)
            rows.append(row)
        if not any(c.get("jsonPath") == ".metadata.creationTimestamp" for c in extra):
            cols.append(_col("Age", "date"))
            for row, o in zip(rows, items, strict=True):
                row.append(_age(o))
        return cols, rows
    if t.rt.key in ("namespaces",):
        return [_col("Name", fmt="name"), _col("Status"), _col("Age")], [
            [o["metadata"]["name"], (o.get("status") or {}).get("phase", ""), _age(o)] for o in items
        ]
    return [_col("Name", fmt="name"), _col("Age")], [[o["metadata"]["name"], _age(o)] for o in items]


def table(t: Target, items: list[Obj], list_meta: Obj, include_object: str | None) -> Obj:
    cols, rows = _columns_and_rows(t, items)
    out_rows = []
    for obj, cells in zip(items, rows, strict=True):
        if include_object == "Object":
            embedded: Obj = {**obj, "apiVersion": t.api_version, "kind": t.rt.kind}
        elif include_object == "None":
            embedded = {}
        else:
            embedded = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        out_rows.append({"cells": cells, "object": embedded})
    md = {k: v for k, v in list_meta.items() if k in ("resourceVersion", "continue", "remainingItemCount")}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": md,
        "columnDefinitions": cols,
        "rows": out_rows,
    }
