"""The gates a job's missing pods wait behind (see `active.py`): its Service (or, in per-pod
service mode, every pod's Service), the framework's extra children and the gang (PodGroup).
Each function plans what the gate needs (creates, updates, deletes), says on the job why pods
wait (Running=False and a Warning event, when that changes) and returns whether pods may be
created. Pure like the rest of the planner.
"""

from __future__ import annotations

from kubetrain.operator import gang
from kubetrain.operator import status as st
from kubetrain.operator.desired import DesiredChildren
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.podgroupsync import pod_group_update
from kubetrain.operator.pods import controlled_by, pod_name, terminating


def service_ok(r: ReconcileDraft, desired: DesiredChildren) -> bool:
    if desired.layout.per_pod_services:
        return pod_services_ok(r, desired)
    service = r.observed.service
    if service is None:
        r.plan.create_service = desired.service
        return True
    if controlled_by(service, r.job):
        return True
    return _service_conflict(r, [desired.layout.name])


def pod_services_ok(r: ReconcileDraft, desired: DesiredChildren) -> bool:
    """Per-pod service mode: every pod's Service exists before pods are created (as the job's
    Service does otherwise); Services of pods the spec no longer has (a scale-down) go."""
    wanted = {desired.layout.pod_name(t, i): (t, i) for t, i in desired.shape.slots()}
    for service in r.observed.job_services:
        name = pod_name(service)
        if name not in wanted and controlled_by(service, r.job) and not terminating(service):
            r.plan.delete_pod_services.append(name)
    foreign: list[str] = []
    for name, (rtype, index) in wanted.items():
        found = r.observed.service_named(name)
        if found is None:
            r.plan.create_pod_services.append(desired.pod_service(rtype, index))
        elif not controlled_by(found, r.job):
            foreign.append(name)
    if not foreign:
        return True
    return _service_conflict(r, foreign)


def extra_children_ok(r: ReconcileDraft, desired: DesiredChildren) -> bool:
    """The framework's extra children (`Framework.extra_children`): create-only ones, then
    the observed ones, while an observed one is missing; an observed one whose content
    differs is replaced. One of their names taken by an object the job does not own: a
    condition and an event, no pods."""
    wanted = desired.extra(r.pods)
    if not wanted:
        return True
    seen = {(o.get("kind"), (o.get("metadata") or {}).get("name")): o for o in r.observed.extra}
    missing = False
    for child in wanted:
        if not child.observed:
            continue
        kind, name = child.obj["kind"], child.obj["metadata"]["name"]
        current = seen.get((kind, name))
        if current is None:
            missing = True
        elif not controlled_by(current, r.job):
            message = (
                f"{kind} {name} already exists and is not owned by {r.title}: "
                "delete or rename it; no pods are created until then"
            )
            if st.set_not_running(r.status, st.REASON_RESOURCE_EXISTS, message, r.now):
                r.event("Warning", st.REASON_RESOURCE_EXISTS, message)
            return False
        elif current.get("data") != child.obj.get("data") and not terminating(current):
            r.plan.update_children.append({**current, "data": child.obj.get("data")})
    if missing:
        r.plan.create_children = [c.obj for c in wanted if not c.observed]
        r.plan.create_children += [
            c.obj for c in wanted if c.observed and (c.obj["kind"], c.obj["metadata"]["name"]) not in seen
        ]
    return True


def gang_ok(r: ReconcileDraft, desired: DesiredChildren) -> bool:
    decision = gang.decide(desired, r.observed.pod_group, r.observed.pod_group_crd_installed)
    r.plan.create_pod_group = decision.create_pod_group
    group, wanted = r.observed.pod_group, desired.pod_group
    if group is not None and wanted is not None and controlled_by(group, r.job) and not terminating(group):
        r.plan.update_pod_group = pod_group_update(wanted, group)  # schedulingPolicy changed (§8)
    if decision.waiting is not None and not st.is_true(r.status, st.RUNNING):
        reason, message, event_reason = decision.waiting
        if st.set_not_running(r.status, reason, message, r.now) and event_reason:
            r.event("Warning", event_reason, message)
    return decision.may_create_pods


def _service_conflict(r: ReconcileDraft, names: list[str]) -> bool:
    """Services the job needs are taken by objects it does not own: a condition and an event
    (once), no pods. Always False (the gate stays closed)."""
    shown = ", ".join(names[:5]) + (" …" if len(names) > 5 else "")
    message = (
        f"Service {shown} already exists and is not owned by "
        f"{r.title}: delete or rename it; no pods are created until then"
    )
    if st.set_not_running(r.status, st.REASON_SERVICE_CONFLICT, message, r.now):
        r.event("Warning", st.REASON_SERVICE_CONFLICT, message)
    return False
