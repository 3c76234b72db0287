"""Volcano's scheduling messages, as vc-scheduler words them — pure.

- `task_status`: a member's task status (pkg/scheduler/api helpers.go `getTaskStatus`; a pod
  the simulator bound whose binding the watch has not shown yet is `Binding`);
- `fit_error`: `JobInfo.FitError` — `pod group is not ready, <count status, sorted, with
  minAvailable>; Pending: <count reason, sorted>. Origin reason is <pod>: <its FitErrors>`;
- `gang_unschedulable`: the text of the PodGroup's `Unschedulable` condition and Event (the gang
  plugin's `OnSessionClose`, the cache's `RecordJobStatusEvent`): `<k>/<n> tasks in gang
  unschedulable: <fit_error>`;
- `schedulable`: `TaskSchedulingReason` for a member placed before the one no node takes (its
  allocation discarded with the gang's): `Pod <ns>/<name> can possibly be assigned to <node>,
  once minAvailable is satisfied`;
- `overused`: the overcommit plugin's enqueue refusal, `resource in cluster is overused: overused
  cpu, overused memory, ...` (`FormatResourceNames`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

Obj = dict[str, Any]

SCHEDULABLE = "Schedulable"  # PodReasonSchedulable
UNSCHEDULABLE = "Unschedulable"  # PodReasonUnschedulable
READY = "pod group is ready"  # PodGroupReady
NOT_READY = "pod group is not ready"  # PodGroupNotReady
READY_STATUSES = frozenset({"Bound", "Binding", "Running", "Allocated", "Succeeded"})  # ReadyTaskNum
OVERUSED = "resource in cluster is overused"
_NOT_COMPARED = frozenset({"pods"})  # a pod count is no Volcano Resource dimension


def task_status(pod: Obj, bound: bool) -> str:
    """`getTaskStatus` of a member that is not being deleted; `bound`: the simulator bound it."""
    phase = str((pod.get("status") or {}).get("phase") or "Pending")
    if phase == "Pending":
        if (pod.get("spec") or {}).get("nodeName"):
            return "Bound"
        return "Binding" if bound else "Pending"
    if phase in ("Running", "Succeeded", "Failed"):
        return phase
    return "Unknown"


def _histogram(counts: Mapping[str, int]) -> str:
    return ", ".join(sorted(f"{n} {key}" for key, n in counts.items()))


def fit_error(
    statuses: Iterable[str],
    min_member: int,
    pending_reasons: Iterable[str],
    origin: tuple[str, str] | None = None,
) -> str:
    """`JobInfo.FitError`: the members' task statuses and `minAvailable`, the reasons of the
    `Pending` ones, and the first member's own fit errors (`origin`: pod name, message)."""
    counts = Counter(statuses)
    ready = sum(n for status, n in counts.items() if status in READY_STATUSES) >= min_member
    counts["minAvailable"] = min_member
    message = f"{READY if ready else NOT_READY}, {_histogram(counts)}"
    reasons = Counter(pending_reasons)
    if reasons:
        message += f"; Pending: {_histogram(reasons)}"
    if origin is not None:
        message += f". Origin reason is {origin[0]}: {origin[1]}"
    return message


def gang_unschedulable(count: int, tasks: int, fit: str) -> str:
    return f"{count}/{tasks} tasks in gang unschedulable: {fit}"


def schedulable(pod: Obj, node: str) -> str:
    meta = pod.get("metadata") or {}
    return (
        f"Pod {meta.get('namespace')}/{meta.get('name')} can possibly be assigned to {node}, "
        "once minAvailable is satisfied"
    )


def overused(need: Mapping[str, Fraction], idle: Mapping[str, Fraction]) -> str:
    """`LessEqualWithDimensionAndResourcesName`'s names — cpu, memory, then the other resources
    (sorted; Volcano takes them in map order) — of each resource the group needs more of than is
    idle, in `FormatResourceNames`' words."""
    short = [
        name
        for name, quantity in need.items()
        if name not in _NOT_COMPARED and quantity > 0 and quantity > idle.get(name, Fraction(0))
    ]
    names = [n for n in ("cpu", "memory") if n in short] + sorted(
        n for n in short if n not in ("cpu", "memory")
    )
    if not names:
        return OVERUSED
    return f"{OVERUSED}: " + ", ".join(f"overused {name}" for name in names)
