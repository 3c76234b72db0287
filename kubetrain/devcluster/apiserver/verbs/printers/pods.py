"""Pods: NAME READY STATUS RESTARTS AGE, IP NODE at priority 1 (a subset of `printPod`, k8s.io/kubernetes
pkg/printers/internalversion/printers.go: no NOMINATED NODE, READINESS GATES columns and no
`(… ago)` after the restart count)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.printers.common import AGE, NAME, age, col

COLUMNS = [
    NAME,
    col("Ready"),
    col("Status"),
    col("Restarts", "string"),
    AGE,
    col("IP", priority=1),
    col("Node", priority=1),
]


def row(obj: Obj, now: datetime) -> list[Any]:
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
        age(obj, now),
        status.get("podIP") or "<none>",
        (obj.get("spec") or {}).get("nodeName") or "<none>",
    ]
