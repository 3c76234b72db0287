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

from kubetrain.devcluster.gang import volcanofit
from kubetrain.devcluster.gang.filters import NoFit
from kubetrain.devcluster.gang.resources import TERMINAL, Resources, add, fits, resources, show, take
from kubetrain.devcluster.kubelet.fit import NEVER_PREEMPTS, NOT_HELPFUL

Obj = dict[str, Any]
Key = tuple[str, str]
Placed = list[tuple[Obj, str]]


@dataclass(frozen=True)
class Scheduling:
    """What a decision needs from the simulator: placement, bindings so far, binding, the
    report on a member that is not bound (its `PodScheduled=False` condition with reason and
    message, and its `FailedScheduling` Event) and any other Event (`event`: the object, type,
    reason, message)."""

    place: Callable[[list[Obj], dict[str, Resources]], Placed | NoFit]
    is_bound: Callable[[Obj], bool]
    bind: Callable[[Placed], Awaitable[None]]
    unschedulable: Callable[[Obj, str, str], Awaitable[None]]
    event: Callable[[Obj, str, str, str], None]
    node_count: Callable[[], int]
    session: str  # Volcano's transitionID for the conditions this simulator writes


REJECT_PERCENTAGE = 10  # the coscheduling plugin's default podGroupRejectPercentage


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
    """Volcano's enqueue, allocate and jobStatus for one PodGroup: its new status. The members
    tried and not bound get their `PodScheduled` condition (`scheduling.unschedulable`), the
    group its Events (`_volcano_events`)."""
    min_member = group_min_member(group)
    status = dict(group.get("status") or {})
    phase = status.get("phase") or ""
    if phase == "":
        new_status = {**status, "phase": "Pending"}
        _volcano_events(group, new_status, pods, None, scheduling)
        return new_status
    bound = [p for p in pods if scheduling.is_bound(p)]
    succeeded = [p for p in pods if pod_phase(p) == "Succeeded"]
    unbound = [p for p in pods if not scheduling.is_bound(p) and pod_phase(p) not in TERMINAL]
    condition: tuple[str, str] | None = None
    nofit: NoFit | None = None
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
            # The overcommit plugin's enqueue refusal.
            scheduling.event(group, "Normal", "Unschedulable", volcanofit.overused(need, idle))
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
                nofit = placed
                fit = _volcano_fit_error(pods, min_member, nofit, scheduling)
                # The gang plugin: minAvailable less the ready members and those placed before.
                unready = min_member - len(bound) - len(succeeded) - nofit.schedulable
                condition = ("NotEnoughResources", volcanofit.gang_unschedulable(unready, len(pods), fit))
                await _volcano_tasks_unschedulable(unbound, nofit, fit, scheduling)
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
    _volcano_events(group, new, pods, nofit, scheduling)
    return new


def _volcano_fit_error(pods: list[Obj], min_member: int, nofit: NoFit | None, scheduling: Scheduling) -> str:
    """`JobInfo.FitError` after this cycle: the members placed before the one no node takes are
    `Schedulable`, every other Pending member `Unschedulable`; that one's message the origin."""
    statuses = [volcanofit.task_status(p, scheduling.is_bound(p)) for p in pods]
    pending = sum(1 for s in statuses if s == "Pending")
    placed = nofit.schedulable if nofit is not None else 0
    reasons = [volcanofit.SCHEDULABLE] * placed + [volcanofit.UNSCHEDULABLE] * (pending - placed)
    origin = None
    if nofit is not None:
        origin = (str((nofit.pod.get("metadata") or {}).get("name")), nofit.message)
    return volcanofit.fit_error(statuses, min_member, reasons, origin)


async def _volcano_tasks_unschedulable(
    unbound: list[Obj], nofit: NoFit, fit: str, scheduling: Scheduling
) -> None:
    """`RecordJobStatusEvent`'s `taskUnschedulable` for each member not bound, with
    `TaskSchedulingReason`: placed before the one no node takes, `Schedulable`; that one, its
    nodes' reasons; any other, the job's fit error."""
    before = {obj_key(pod): node for pod, node in nofit.before}
    for pod in unbound:
        node = before.get(obj_key(pod))
        if node is not None:
            await scheduling.unschedulable(pod, volcanofit.SCHEDULABLE, volcanofit.schedulable(pod, node))
        elif obj_key(pod) == obj_key(nofit.pod):
            await scheduling.unschedulable(pod, volcanofit.UNSCHEDULABLE, nofit.message)
        else:
            await scheduling.unschedulable(pod, volcanofit.UNSCHEDULABLE, fit)


def _volcano_events(
    group: Obj, new: Obj, pods: list[Obj], nofit: NoFit | None, scheduling: Scheduling
) -> None:
    """`RecordJobStatusEvent` on the PodGroup at the end of a cycle: a group still `Pending` or
    `Inqueue` gets `Unschedulable` (Warning) `<pending>/<members> tasks in gang unschedulable:
    <fit error>`; any other whose status changes `Scheduled` (Normal) `pod group is ready`."""
    if new.get("phase") in ("", "Pending", "Inqueue"):
        fit = _volcano_fit_error(pods, group_min_member(group), nofit, scheduling)
        pending = sum(1 for p in pods if volcanofit.task_status(p, scheduling.is_bound(p)) == "Pending")
        message = volcanofit.gang_unschedulable(pending, len(pods), fit)
        scheduling.event(group, "Warning", "Unschedulable", message)
    elif new != (group.get("status") or {}):
        scheduling.event(group, "Normal", "Scheduled", volcanofit.READY)


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
    if unbound and len(pods) < min_member:
        for pod in unbound:  # each attempt fails at PreFilter: kube-scheduler's FailedScheduling
            scheduling.event(pod, "Warning", "FailedScheduling", _too_few(group, pod, len(pods), scheduling))
    if unbound and len(pods) >= min_member:
        idle: Resources = {}
        for node_free in free.values():
            for k, v in node_free.items():
                idle[k] = idle.get(k, Fraction(0)) + v
        placed: Placed | NoFit | None = None
        if bound or fits(resources(spec.get("minResources")), idle):
            placed = scheduling.place(unbound, free)
        if isinstance(placed, NoFit):
            rejected = coscheduling_rejection(group, placed.pod, len(bound))
            await scheduling.unschedulable(placed.pod, "Unschedulable", placed.message + rejected)
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


def _too_few(group: Obj, pod: Obj, count: int, scheduling: Scheduling) -> str:
    """kube-scheduler's FitError for a member whose gang has fewer than minMember pods: the
    coscheduling PreFilter's text (UnschedulableAndUnresolvable on every node), then the PostFilter
    texts: DefaultPreemption's and the coscheduling plugin's."""
    nodes = scheduling.node_count()
    name = (pod.get("metadata") or {}).get("name")
    preemption = f"0/{nodes} nodes are available: {nodes} {NOT_HELPFUL}."
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        preemption = NEVER_PREEMPTS
    return (
        f"0/{nodes} nodes are available: pre-filter pod {name} cannot find enough sibling pods, "
        f"current pods number: {count}, minMember of group: {group_min_member(group)}. "
        f"preemption: {preemption}{coscheduling_rejection(group, pod, 0)}"
    )


def coscheduling_rejection(group: Obj | None, pod: Obj, assigned: int) -> str:
    """What the coscheduling PostFilter adds (after DefaultPreemption's, joined by ", ") to the
    FitError of a member placed nowhere: `can not find pod group` for a pod without one; nothing
    while the group's assigned pods reach minMember or miss it by at most 10 % (the default
    `podGroupRejectPercentage`); else the rejection of the whole group."""
    if group is None:
        return ", can not find pod group"
    min_member = group_min_member(group)
    if assigned >= min_member or (min_member - assigned) / min_member <= REJECT_PERCENTAGE / 100:
        return ""
    ns, name = obj_key(group)
    pod_name = (pod.get("metadata") or {}).get("name")
    return (
        f", PodGroup {ns}/{name} gets rejected due to Pod {pod_name} is unschedulable even after PostFilter"
    )
