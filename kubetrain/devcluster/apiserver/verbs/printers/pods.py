"""Pods: NAME READY STATUS RESTARTS AGE, and IP NODE NOMINATED NODE READINESS GATES at priority 1,
cell for cell as kube-apiserver's `printPod` (k8s.io/kubernetes
pkg/printers/internalversion/printers.go) prints them, and the row's `Completed` condition of a
finished pod (`podSuccessConditions` / `podFailedConditions`).

STATUS, in upstream's order of precedence (each later rule overrides an earlier one):
  1. the phase, or `status.reason` when set (`Evicted`, `NodeLost`, …); `SchedulingGated` when a
     PodScheduled condition carries that reason;
  2. the first init container that has not finished: `Init:<terminated reason>`,
     `Init:Signal:N` / `Init:ExitCode:N` when it failed without a reason, `Init:<waiting reason>`
     (`Init:CrashLoopBackOff`, `Init:ErrImagePull`, … but not `PodInitializing`), else
     `Init:i/n`. Init containers that exited 0 are skipped, and so are started sidecars
     (restartable init containers, `restartPolicy: Always`), which count in READY when ready;
  3. unless an init container holds the pod (or the Initialized condition is True anyway), the
     app containers from last to first, so the first container's state wins: a waiting reason
     (`ContainerCreating`, `PodInitializing`, `CrashLoopBackOff`, `ErrImagePull`,
     `ImagePullBackOff`, `CreateContainerConfigError`, …), a terminated reason (`Completed`,
     `Error`, `OOMKilled`, …) or `Signal:N` / `ExitCode:N`; `Completed` while a ready container
     still runs reads `Running` with a True Ready condition and `NotReady` without one;
  4. with a deletionTimestamp: `Unknown` if `status.reason` is `NodeLost`, else `Terminating`
     unless the phase is already Succeeded or Failed.

READY counts ready running app containers and ready started sidecars out of the app containers
plus the sidecars. RESTARTS sums the restart counts — of every init container while one holds
the pod, else of the sidecars and the app containers — followed by `(<age> ago)` of the latest
`lastState.terminated.finishedAt` among them when there were restarts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.api.metatime import parse_time
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

# k8s.io/kubernetes pkg/util/node.NodeUnreachablePodReason
NODE_UNREACHABLE_POD_REASON = "NodeLost"
# k8s.io/api/core/v1.PodReasonSchedulingGated
SCHEDULING_GATED = "SchedulingGated"


class _Restarts:
    """A restart count and the latest `lastState.terminated.finishedAt` behind it."""

    def __init__(self) -> None:
        self.count = 0
        self.last: datetime | None = None

    def add(self, status: Obj) -> None:
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
    status = _dict(obj.get("status"))
    spec = _dict(obj.get("spec"))
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    conditions = [c for c in items(status.get("conditions")) if isinstance(c, dict)]
    if any(c.get("type") == "PodScheduled" and c.get("reason") == SCHEDULING_GATED for c in conditions):
        reason = SCHEDULING_GATED

    init_specs = [c for c in items(spec.get("initContainers")) if isinstance(c, dict)]
    restartable = [c for c in init_specs if c.get("restartPolicy") == "Always"]  # IsRestartableInitContainer
    sidecars = {c.get("name") for c in restartable}
    total = len(items(spec.get("containers"))) + len(restartable)
    ready = 0

    all_inits, sidecar_restarts = _Restarts(), _Restarts()
    initializing = False
    for i, cs in enumerate(c for c in items(status.get("initContainerStatuses")) if isinstance(c, dict)):
        all_inits.add(cs)
        sidecar = cs.get("name") in sidecars
        if sidecar:
            sidecar_restarts.add(cs)
        terminated = field(cs, "state", "terminated")
        waiting_reason = field(cs, "state", "waiting", "reason")
        if isinstance(terminated, dict) and _int(terminated.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            ready += 1 if cs.get("ready") else 0
            continue
        if isinstance(terminated, dict):  # initialization failed
            reason = "Init:" + _terminated_reason(terminated)
        elif waiting_reason and waiting_reason != "PodInitializing":
            reason = f"Init:{waiting_reason}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    restarts = all_inits
    if not initializing or _initialized(conditions):
        restarts = sidecar_restarts
        has_running = False
        for cs in reversed([c for c in items(status.get("containerStatuses")) if isinstance(c, dict)]):
            restarts.add(cs)
            waiting_reason = field(cs, "state", "waiting", "reason")
            terminated = field(cs, "state", "terminated")
            if waiting_reason:
                reason = waiting_reason
            elif isinstance(terminated, dict):
                reason = _terminated_reason(terminated)
            elif cs.get("ready") and isinstance(field(cs, "state", "running"), dict):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _has_ready(conditions) else "NotReady"

    if obj["metadata"].get("deletionTimestamp"):
        if status.get("reason") == NODE_UNREACHABLE_POD_REASON:
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):  # podutil.IsPodPhaseTerminal
            reason = "Terminating"
    return reason, ready, total, restarts


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


def _terminated_reason(terminated: Obj) -> str:
    """A terminated state's reason, else `Signal:N` for a non-zero signal, else `ExitCode:N`."""
    if terminated.get("reason"):
        return str(terminated["reason"])
    if _int(terminated.get("signal")) != 0:
        return f"Signal:{_int(terminated.get('signal'))}"
    return f"ExitCode:{_int(terminated.get('exitCode'))}"


def _initialized(conditions: list[Obj]) -> bool:
    """`isPodInitializedConditionTrue`: the first Initialized condition is True."""
    first = next((c for c in conditions if c.get("type") == "Initialized"), None)
    return first is not None and first.get("status") == "True"


def _has_ready(conditions: list[Obj]) -> bool:
    """`hasPodReadyCondition`: some Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
