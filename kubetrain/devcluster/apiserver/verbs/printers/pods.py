"""Pods: NAME READY STATUS RESTARTS AGE, and IP NODE NOMINATED NODE READINESS GATES at priority 1,
cell for cell as kube-apiserver's `printPod` (k8s.io/kubernetes
pkg/printers/internalversion/printers.go) prints them, and the row's `Completed` condition of a
finished pod (`podSuccessConditions` / `podFailedConditions`).

STATUS, READY and RESTARTS are decided by `kubetrain.api.podprint` (the rules are there, shared with
the dashboard's pod table); RESTARTS is followed by `(<age> ago)` of the latest
`lastState.terminated.finishedAt` among the statuses it sums when there were restarts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.api.podprint import printed_pod
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.printers.common import (
    AGE,
    NAME,
    age,
    col,
    field,
    human_duration,
    items,
)

COLUMNS = [
    NAME,
    col("Ready"),
    col("Status"),
    col("Restarts"),
    AGE,
    col("IP", priority=1),
    col("Node", priority=1),
    col("Nominated Node", priority=1),
    col("Readiness Gates", priority=1),
]


class _Restarts:
    """A restart count and the latest `lastState.terminated.finishedAt` behind it."""

    def __init__(self) -> None:
        self.count = 0
        self.last: datetime | None = None

    def add(self, status: Mapping[str, Any]) -> None:
        self.count += _int(status.get("restartCount"))
        finished = parse_time(field(status, "lastState", "terminated", "finishedAt"))
        if finished is not None and (self.last is None or finished > self.last):
            self.last = finished

    def cell(self, now: datetime) -> str:
        """`restartsStr`: the count, with `(… ago)` when there were restarts and a finish time."""
        if self.count != 0 and self.last is not None:
            return f"{self.count} ({human_duration((now - self.last).total_seconds())} ago)"
        return str(self.count)


def row(obj: Obj, now: datetime) -> list[Any]:
    status = _dict(obj.get("status"))
    spec = _dict(obj.get("spec"))
    reason, ready, total, restarts = pod_status(obj)
    return [
        obj["metadata"]["name"],
        f"{ready}/{total}",
        reason,
        restarts.cell(now),
        age(obj, now),
        pod_ip(status) or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        readiness_gates(spec, status),
    ]


def row_conditions(obj: Obj) -> list[Obj]:
    """The table row's conditions: `Completed` for a pod in a terminal phase (`printPod`'s
    `podSuccessConditions` / `podFailedConditions`), none otherwise."""
    phase = field(obj, "status", "phase")
    if phase == "Succeeded":
        message = "The pod has completed successfully."
    elif phase == "Failed":
        message = "The pod failed."
    else:
        return []
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]


def pod_status(obj: Obj) -> tuple[str, int, int, _Restarts]:
    """(STATUS, ready containers, containers, restarts) as `printPod` decides them."""
    printed = printed_pod(obj)
    restarts = _Restarts()
    for cs in printed.restarted:
        restarts.add(cs)
    return printed.status, printed.ready, printed.total, restarts


def pod_ip(status: Obj) -> str:
    """The pod's first IP: `podIP`, else `podIPs[0].ip` (`Convert_v1_PodStatus_To_core_PodStatus`
    makes `podIP` the internal PodIPs[0] that printPod prints, whatever `podIPs` says)."""
    if status.get("podIP"):
        return str(status["podIP"])
    ips = items(status.get("podIPs"))
    return str(field(ips[0], "ip") or "") if ips else ""


def readiness_gates(spec: Obj, status: Obj) -> str:
    """`<none>`, or how many of the readiness gates' conditions are True out of the gates (the
    first condition of a gate's type decides)."""
    gates = items(spec.get("readinessGates"))
    if not gates:
        return "<none>"
    conditions = [c for c in items(status.get("conditions")) if isinstance(c, dict)]
    true = 0
    for gate in gates:
        kind = field(gate, "conditionType")
        first = next((c for c in conditions if c.get("type") == kind), None)
        true += 1 if first is not None and first.get("status") == "True" else 0
    return f"{true}/{len(gates)}"


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
