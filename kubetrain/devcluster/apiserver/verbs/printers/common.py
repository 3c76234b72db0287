"""What every printer shares: column definitions, ages (`duration.HumanDuration`) and the cell
helpers of kube-apiserver's printers (k8s.io/kubernetes pkg/printers/internalversion/printers.go).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.api.quantity import QuantityError, format_quantity, is_binary, parse_quantity
from kubetrain.devcluster.apiserver.base.types import Obj

# A kind's printer: its column definitions and, for one object at a time `now`, its cells (all of
# them, the wide ones too: kube-apiserver's table convertor prints with `Wide` set and kubectl
# hides the columns of priority 1 unless asked for `-o wide`).
Row = Callable[[Obj, datetime], list[Any]]


def col(name: str, typ: str = "string", priority: int = 0, fmt: str = "") -> Obj:
    return {"name": name, "type": typ, "format": fmt, "description": name, "priority": priority}


NAME = col("Name", fmt="name")
AGE = col("Age")


def human_duration(seconds: float) -> str:
    """apimachinery `duration.HumanDuration`: `<invalid>` more than a second in the future (a
    skewed clock within that is `0s`), then seconds, minutes, hours, days and years."""
    if int(seconds) < -1:
        return "<invalid>"
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
    if d < 365 * 8:
        return f"{d // 365}y{d % 365}d" if d % 365 else f"{d // 365}y"
    return f"{d // 365}y"


def since(ts: Any, now: datetime) -> str:
    """`translateTimestampSince` / `translateMicroTimestampSince`: `<unknown>` for a zero time."""
    when = parse_time(ts)
    return "<unknown>" if when is None else human_duration((now - when).total_seconds())


def age(obj: Obj, now: datetime) -> str:
    return since(obj["metadata"].get("creationTimestamp"), now)


def name(obj: Obj) -> str:
    return str(obj["metadata"].get("name", ""))


def field(obj: Any, *path: str) -> Any:
    """obj[path[0]][path[1]]…, None where a step is missing or not an object."""
    for step in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(step)
    return obj


def items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def count(value: Any) -> int:
    """`len()` of a map or list field (Secret data, webhooks, …); 0 when unset."""
    return len(value) if isinstance(value, (dict, list)) else 0


def quantity(raw: Any) -> str:
    """`resource.Quantity.String()`: the canonical form (`1536Mi`, `500m`), as kube-apiserver
    prints a quantity it decoded; text that is no quantity is printed as it is."""
    try:
        return format_quantity(parse_quantity(raw), binary=is_binary(raw))
    except (QuantityError, ValueError, TypeError, ZeroDivisionError):
        return str(raw)


def label_set(labels: Any) -> str:
    """`labels.FormatLabels`: `k=v,k2=v2` sorted by key, `<none>` when empty."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))
