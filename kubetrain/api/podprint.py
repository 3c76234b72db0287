"""A pod's STATUS, READY and RESTARTS as `kubectl get pods` prints them: kube-apiserver's
`printPod` (k8s.io/kubernetes pkg/printers/internalversion/printers.go). devcluster's table
printer and the dashboard's pod table both read it. Pure.

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
the pod, else of the sidecars and the app containers (`restarted`: those container statuses).
`state` is the container state (a `waiting` or `terminated` object) whose reason STATUS shows, for
its message; None when the pod's own phase or reason shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# k8s.io/kubernetes pkg/util/node.NodeUnreachablePodReason
NODE_UNREACHABLE_POD_REASON = "NodeLost"
# k8s.io/api/core/v1.PodReasonSchedulingGated
SCHEDULING_GATED = "SchedulingGated"

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class PrintedPod:
    status: str  # the STATUS column
    ready: int
    total: int
    restarted: tuple[Obj, ...]  # the container statuses RESTARTS sums
    state: Obj | None  # the waiting/terminated state STATUS shows the reason of
    init: bool  # that state is an init container's


def printed_pod(pod: Obj) -> PrintedPod:
    """`printPod`'s STATUS, READY and RESTARTS decisions for `pod`."""
    status = _dict(pod.get("status"))
    spec = _dict(pod.get("spec"))
    phase = status.get("phase") or ""
    reason = str(status.get("reason") or phase)
    conditions = _dicts(status.get("conditions"))
    if any(c.get("type") == "PodScheduled" and c.get("reason") == SCHEDULING_GATED for c in conditions):
        reason = SCHEDULING_GATED

    init_specs = _dicts(spec.get("initContainers"))
    restartable = [c for c in init_specs if c.get("restartPolicy") == "Always"]  # IsRestartableInitContainer
    sidecars = {c.get("name") for c in restartable}
    total = len(_items(spec.get("containers"))) + len(restartable)
    ready = 0
    state: Obj | None = None

    all_inits: list[Obj] = []
    sidecar_statuses: list[Obj] = []
    initializing = False
    for i, cs in enumerate(_dicts(status.get("initContainerStatuses"))):
        all_inits.append(cs)
        sidecar = cs.get("name") in sidecars
        if sidecar:
            sidecar_statuses.append(cs)
        terminated = _state(cs, "terminated")
        waiting = _state(cs, "waiting")
        if terminated is not None and _int(terminated.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            ready += 1 if cs.get("ready") else 0
            continue
        if terminated is not None:  # initialization failed
            reason, state = "Init:" + terminated_reason(terminated), terminated
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason, state = f"Init:{waiting['reason']}", waiting
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    restarted = all_inits
    if not initializing or _initialized(conditions):
        restarted = sidecar_statuses
        app_state: Obj | None = None
        has_running = False
        for cs in reversed(_dicts(status.get("containerStatuses"))):
            restarted.append(cs)
            waiting = _state(cs, "waiting")
            terminated = _state(cs, "terminated")
            if waiting is not None and waiting.get("reason"):
                reason, app_state = str(waiting["reason"]), waiting
            elif terminated is not None:
                reason, app_state = terminated_reason(terminated), terminated
            elif cs.get("ready") and _state(cs, "running") is not None:
                has_running = True
                ready += 1
        if app_state is not None:
            state, initializing = app_state, False
        if reason == "Completed" and has_running:
            reason = "Running" if _has_ready(conditions) else "NotReady"

    if _dict(pod.get("metadata")).get("deletionTimestamp"):
        if status.get("reason") == NODE_UNREACHABLE_POD_REASON:
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):  # podutil.IsPodPhaseTerminal
            reason = "Terminating"
    return PrintedPod(reason, ready, total, tuple(restarted), state, initializing and state is not None)


def terminated_reason(terminated: Obj) -> str:
    """A terminated state's reason, else `Signal:N` for a non-zero signal, else `ExitCode:N`."""
    if terminated.get("reason"):
        return str(terminated["reason"])
    if _int(terminated.get("signal")) != 0:
        return f"Signal:{_int(terminated.get('signal'))}"
    return f"ExitCode:{_int(terminated.get('exitCode'))}"


def _state(cs: Obj, kind: str) -> Obj | None:
    value = _dict(cs.get("state")).get(kind)
    return value if isinstance(value, Mapping) else None


def _initialized(conditions: list[Obj]) -> bool:
    """`isPodInitializedConditionTrue`: the first Initialized condition is True."""
    first = next((c for c in conditions if c.get("type") == "Initialized"), None)
    return first is not None and first.get("status") == "True"


def _has_ready(conditions: list[Obj]) -> bool:
    """`hasPodReadyCondition`: some Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _dict(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> list[Obj]:
    return [v for v in _items(value) if isinstance(v, Mapping)]


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
