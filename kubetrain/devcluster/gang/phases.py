"""The PodGroup decisions of the simulated gang schedulers, one scheduling cycle per group.

`volcano_status` plays Volcano (`scheduling.volcano.sh/v1beta1`): enqueue (`Pending` →
`Inqueue` when the idle capacity covers `minResources` and `minMember` pod slots), allocate
(bind the unbound members all or nothing once bound + succeeded + placed reach `minMember`) and
jobStatus (`Running`, counts, the `Unschedulable` condition). `coscheduling_status` plays
scheduler-plugins (`scheduling.x-k8s.io/v1alpha1`): the coscheduling plugin's PreFilter/Permit
and the PodGroup controller's phases. Both return the group's new status; placing and binding
pods goes through `Scheduling`, which `kubetrain.devcluster.gang.simulator.GangSchedulerSimulator`
provides (the only I/O is its `bind`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from kubetrain.devcluster.gang.filters import NoFit
from kubetrain.devcluster.gang.resources import TERMINAL, Resources, add, fits, resources, show, take

Obj = dict[str, Any]
Key = tuple[str, str]
Placed = list[tuple[Obj, str]]


@dataclass(frozen=True)
class Scheduling:
    """What a decision needs from the simulator: placement, bindings so far, binding, and the
    report on a member no node takes (its `PodScheduled=False` condition)."""

    place: Callable[[list[Obj], dict[str, Resources]], Placed | NoFit]
    is_bound: Callable[[Obj], bool]
    bind: Callable[[Placed], Awaitable[None]]
    unschedulable: Callable[[NoFit], Awaitable[None]]
    session: str  # Volcano's transitionID for the conditions this simulator writes


def obj_key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def pod_phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def now_timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def group_min_member(group: Obj) -> int:
    return int((group.get("spec") or {}).get("minMember") or 0)


def group_min_need(group: Obj) -> Resources:
    spec = group.get("spec") or {}
    return {**resources(spec.get("minResources")), "pods": Fraction(group_min_member(group))}


async def volcano_status(
    group: Obj, pods: list[Obj], free: dict[str, Resources], reserved: Resources, scheduling: Scheduling
) -> Obj:
    """Volcano's enqueue, allocate and jobStatus for one PodGroup: its new status."""
    min_member = group_min_member(group)
    status = dict(group.get("status") or {})
    phase = status.get("phase") or ""
    if phase == "":
        return {**status, "phase": "Pending"}
    bound = [p for p in pods if scheduling.is_bound(p)]
    succeeded = [p for p in pods if pod_phase(p) == "Succeeded"]
    unbound = [p for p in pods if not scheduling.is_bound(p) and pod_phase(p) not in TERMINAL]
    condition: tuple[str, str] | None = None
    if phase == "Pending":
        need = group_min_need(group)
        idle: Resources = {}
        for node_free in free.values():
            add(idle, node_free)
        take(idle, reserved)
        if fits(need, idle):
            phase = "Inqueue"
            add(reserved, need)
        else:
            condition = (
                "NotEnoughResources",
                f"{min_member}/{len(pods)} tasks in gang unschedulable: pod group is not ready, "
                f"minResources ({show(need)}) exceed the idle resources of the cluster ({show(idle)})",
            )
    if phase in ("Inqueue", "Running") and unbound:
        if len(bound) + len(succeeded) + len(unbound) < min_member:
            condition = (
                "NotEnoughTasks",
                f"{min_member - len(bound) - len(succeeded)}/{len(pods)} tasks in gang unschedulable: "
                f"pod group is not ready, {len(unbound)} Pending, {min_member} minAvailable",
            )
        else:
            placed = scheduling.place(unbound, free)
            if isinstance(placed, NoFit):
                # Volcano's JobInfo.FitError: the tasks placed before the one no node takes are
                # Schedulable, that one Unschedulable, the rest not tried (Undetermined).
                tried = {
                    "Schedulable": placed.schedulable,
                    "Unschedulable": 1,
                    "Undetermined": len(unbound) - placed.schedulable - 1,
                }
                why = ", ".join(sorted(f"{n} {reason}" for reason, n in tried.items() if n))
                condition = (
                    "NotEnoughResources",
                    f"{min_member - len(bound) - len(succeeded)}/{len(pods)} tasks in gang unschedulable: "
                    f"pod group is not ready, {len(unbound)} Pending, {min_member} minAvailable; "
                    f"Pending: {why}",
                )
                await scheduling.unschedulable(placed)
            else:
                await scheduling.bind(placed)
                bound += [pod for pod, _ in placed]
                if phase == "Inqueue":
                    take(reserved, group_min_need(group))
    # Volcano's jobStatus: allocated (bound or running) + succeeded >= minMember is Running;
    # short of that an admitted group stays Inqueue and any other goes back to Pending.
    if len(bound) + len(succeeded) >= min_member and phase in ("Inqueue", "Running"):
        phase = "Running"
    elif phase == "Running":
        phase = "Pending"
    counts = {
        "running": sum(1 for p in pods if pod_phase(p) == "Running"),
        "succeeded": len(succeeded),
        "failed": sum(1 for p in pods if pod_phase(p) == "Failed"),
    }
    old = [c for c in status.get("conditions") or () if c.get("type") == "Unschedulable"]
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "Unschedulable"]
    if condition is not None:
        if old and (old[0].get("reason"), old[0].get("message")) == condition:
            conditions.append(old[0])
        else:
            conditions.append(
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": condition[0],
                    "message": condition[1],
                    "transitionID": scheduling.session,
                    "lastTransitionTime": now_timestamp(),
                }
            )
    new = {**status, "phase": phase, **counts}
    if conditions or "conditions" in status:
        new["conditions"] = conditions
    return new


async def coscheduling_status(
    group: Obj, pods: list[Obj], free: dict[str, Resources], reserved: Resources, scheduling: Scheduling
) -> Obj:
    """scheduler-plugins' coscheduling plugin and PodGroup controller for one PodGroup: its new status."""
    spec = group.get("spec") or {}
    min_member = int(spec.get("minMember") or 0)
    status = dict(group.get("status") or {})
    phase = status.get("phase") or ""
    if phase in ("Finished", "Failed"):
        return status
    unbound = [p for p in pods if not (p.get("spec") or {}).get("nodeName") and pod_phase(p) not in TERMINAL]
    bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
    # The coscheduling plugin: PreFilter (minMember pods exist, minResources fit), then Permit
    # releases the pods together.
    if unbound and len(pods) >= min_member:
        idle: Resources = {}
        for node_free in free.values():
            for k, v in node_free.items():
                idle[k] = idle.get(k, Fraction(0)) + v
        placed: Placed | NoFit | None = None
        if bound or fits(resources(spec.get("minResources")), idle):
            placed = scheduling.place(unbound, free)
        if isinstance(placed, NoFit):
            await scheduling.unschedulable(placed)
        elif placed is not None and len(bound) + len(placed) >= min_member:
            await scheduling.bind(placed)
            scheduled = int(status.get("scheduled") or 0) + len(placed)
            status["scheduled"] = scheduled
            status.setdefault("scheduleStartTime", now_timestamp())
            if phase in ("PreScheduling", "Scheduling", "Pending", ""):
                phase = "Scheduled" if scheduled >= min_member else "Scheduling"
    # The PodGroup controller.
    if phase == "":
        phase = "Pending"
    elif phase == "Pending":
        if len(pods) >= min_member:
            phase = "PreScheduling"
            owners = sorted(
                f"{obj_key(pods[0])[0]}/{ref.get('name')}"
                for ref in (pods[0].get("metadata") or {}).get("ownerReferences") or ()
            )
            if owners:
                status["occupiedBy"] = ",".join(owners)
    else:
        running = sum(1 for p in pods if pod_phase(p) == "Running")
        succeeded = sum(1 for p in pods if pod_phase(p) == "Succeeded")
        failed = sum(1 for p in pods if pod_phase(p) == "Failed")
        status.update(running=running, succeeded=succeeded, failed=failed)
        if not pods:
            phase = "Pending"
        else:
            if int(status.get("scheduled") or 0) >= min_member and phase == "Scheduling":
                phase = "Scheduled"
            if running + succeeded >= min_member and phase == "Scheduled":
                phase = "Running"
            if failed and failed + running + succeeded >= min_member:
                phase = "Failed"
            if succeeded >= min_member:
                phase = "Finished"
    return {**status, "phase": phase}
