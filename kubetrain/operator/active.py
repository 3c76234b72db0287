"""The part of a reconcile for a valid job that is not finished yet (see `plan.py`): slots of
the observed pods, restarts and failures, suspend, the Service and gang gates, creating missing
pods and the per-replica-type status. Pure like the rest of the planner."""

from __future__ import annotations

from typing import Any

from kubetrain.api.labels import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from kubetrain.frameworks.env import JobLayout, ReplicaCounts
from kubetrain.operator import gang, runpolicy
from kubetrain.operator import restarts as rs
from kubetrain.operator import status as st
from kubetrain.operator.children import pod_slots, replica_selector
from kubetrain.operator.desired import DesiredChildren
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.pods import controlled_by, pod_name, pod_phase, terminating


class ActiveJob:
    """The part of a reconcile for a valid job that is not finished yet."""

    def __init__(self, r: ReconcileDraft, layout: JobLayout, desired: DesiredChildren) -> None:
        self.r, self.layout, self.fw, self.desired = r, layout, r.fw, desired
        self.slots: dict[tuple[str, int], dict[str, Any]] = {}
        self.tallies: dict[str, rs.TypeRestarts] = {}
        lower = {t.lower(): t for t in layout.replicas}
        for pod in r.pods:
            labels = (pod.get("metadata") or {}).get("labels") or {}
            rtype = lower.get(str(labels.get(LABEL_REPLICA_TYPE, "")))
            index = str(labels.get(LABEL_REPLICA_INDEX, ""))
            if rtype is None or not index.isdigit() or int(index) >= layout.count(rtype):
                if not terminating(pod):
                    r.delete([pod_name(pod)])  # a type or index the spec no longer has
                continue
            self.slots[(rtype, int(index))] = pod

    def restart_policy(self, rtype: str) -> str:
        return self.layout.replicas[rtype].restart_policy

    def container(self, rtype: str) -> str:
        template = self.layout.replicas[rtype].template
        containers = (template.get("spec") or {}).get("containers") or []
        index = self.layout.replicas[rtype].container_index
        return str(containers[index].get("name", "")) if index < len(containers) else ""

    def run(self) -> None:
        r, spec = self.r, self.r.spec
        tallies = self.tallies = self.tally_restarts()
        if runpolicy.suspended(spec):
            self.suspend()
            self.write_replica_statuses(tallies)
            return
        if st.is_true(r.old, st.SUSPENDED):
            message = f"{r.title} is resumed."
            st.set_condition(r.status, st.SUSPENDED, False, st.REASON_RESUMED, message, r.now)
            r.status.pop("startTime", None)
            r.event("Normal", st.REASON_RESUMED, message)
        may_create = self.service_ok() & self.gang_ok()
        counts = self.counts(exclude_deleting=False)
        failures, retries = self.failed_pods()
        deadline = runpolicy.deadline(spec, st.parse_time(r.status.get("startTime")))
        limit = runpolicy.backoff_limit(spec)
        base = sum(t.base for t in tallies.values())
        succeeded = self.fw.succeeded(self.layout, counts)
        framework_failure = None if succeeded else self.fw.failed(self.layout, counts)
        if succeeded:
            r.terminal(
                st.SUCCEEDED, st.REASON_SUCCEEDED, f"{r.title} successfully completed.", delete_active=False
            )
        elif framework_failure is not None:
            message = f"{r.title} has failed: {framework_failure}"
            r.terminal(st.FAILED, st.REASON_FAILED, message, delete_active=True)
        elif deadline is not None and r.now >= deadline:
            message = (
                f"{r.title} has exceeded its activeDeadlineSeconds (started {r.status.get('startTime')})."
            )
            r.terminal(st.FAILED, st.REASON_DEADLINE, message, delete_active=True)
        elif failures:
            reason, detail = failures[0]
            r.terminal(st.FAILED, reason, f"{r.title} has failed: {detail}", delete_active=False)
        elif limit is not None and base + len(retries) > limit:
            message = (
                f"{r.title} has failed because it reached its backoffLimit of {limit} "
                f"({base} restarts so far{', another pod failed' if retries else ''})."
            )
            r.terminal(st.FAILED, st.REASON_BACKOFF_LIMIT, message, delete_active=True)
        else:
            self.restart(retries, tallies, limit)
            if may_create:
                self.create_missing(tallies)
            self.update_running(tallies)
            # startTime may have been set just now: the deadline counts from it.
            deadline = runpolicy.deadline(spec, st.parse_time(r.status.get("startTime")))
            r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, deadline)
        self.write_replica_statuses(tallies)

    # --- observations --------------------------------------------------------------------------
    def counts(self, *, exclude_deleting: bool, keep_finished: bool = False) -> dict[str, ReplicaCounts]:
        """Pod phases per type. `exclude_deleting`: pods this plan deletes do not count — except,
        with `keep_finished`, Succeeded/Failed ones (clean-up of a finished job keeps its tally)."""
        out: dict[str, ReplicaCounts] = {}
        for rtype in self.layout.replicas:
            active = pending = succeeded = failed = 0
            done: set[int] = set()
            for (t, i), pod in self.slots.items():
                if t != rtype or terminating(pod):
                    continue
                phase = pod_phase(pod)
                deleting = exclude_deleting and pod_name(pod) in self.r.deleting
                if deleting and not (keep_finished and phase in ("Succeeded", "Failed")):
                    continue
                if phase == "Running":
                    active += 1
                elif phase == "Succeeded":
                    succeeded += 1
                    done.add(i)
                elif phase == "Failed":
                    failed += 1
                else:
                    pending += 1
            out[rtype] = ReplicaCounts(active, pending, succeeded, failed, frozenset(done))
        return out

    def tally_restarts(self) -> dict[str, rs.TypeRestarts]:
        old = self.r.old.get("replicaStatuses") or {}
        tallies: dict[str, rs.TypeRestarts] = {}
        for rtype in self.layout.replicas:
            persisted = (old.get(rtype) or {}).get("restarts") if isinstance(old, dict) else None
            counted = sum(
                rs.slot_restarts(pod, self.container(rtype))
                for (t, _), pod in self.slots.items()
                if t == rtype
            )
            tallies[rtype] = rs.TypeRestarts(persisted if isinstance(persisted, int) else 0, counted)
        return tallies

    def failed_pods(self) -> tuple[list[tuple[str, str]], list[tuple[str, dict[str, Any], rs.Verdict]]]:
        failures: list[tuple[str, str]] = []
        retries: list[tuple[str, dict[str, Any], rs.Verdict]] = []
        for (rtype, _), pod in self.slots.items():
            if terminating(pod) or pod_phase(pod) != "Failed" or pod_name(pod) in self.r.deleting:
                continue
            verdict = rs.classify_failed_pod(pod, self.restart_policy(rtype), self.container(rtype))
            if verdict.action == rs.FAIL:
                failures.append((verdict.reason, verdict.detail))
            else:
                retries.append((rtype, pod, verdict))
        return failures, retries

    # --- decisions -----------------------------------------------------------------------------
    def suspend(self) -> None:
        r = self.r
        r.delete([pod_name(p) for p in r.live_pods()])
        group = r.observed.pod_group
        if group is not None and controlled_by(group, r.job):
            r.plan.delete_pod_group = True
        message = f"{r.title} is suspended."
        if st.set_condition(r.status, st.SUSPENDED, True, st.REASON_SUSPENDED, message, r.now):
            r.event("Normal", st.REASON_SUSPENDED, message)
        for ctype in (st.RUNNING, st.RESTARTING):
            if st.is_true(r.status, ctype):
                st.set_condition(r.status, ctype, False, st.REASON_SUSPENDED, message, r.now)

    def service_ok(self) -> bool:
        r = self.r
        if self.layout.per_pod_services:
            return self.pod_services_ok()
        service = r.observed.service
        if service is None:
            r.plan.create_service = self.desired.service
            return True
        if controlled_by(service, r.job):
            return True
        message = (
            f"Service {self.layout.name} already exists and is not owned by "
            f"{r.title}: delete or rename it; no pods are created until then"
        )
        if st.set_not_running(r.status, st.REASON_SERVICE_CONFLICT, message, r.now):
            r.event("Warning", st.REASON_SERVICE_CONFLICT, message)
        return False

    def pod_services_ok(self) -> bool:
        """Per-pod service mode: every pod's Service exists before pods are created (as the job's
        Service does otherwise); Services of pods the spec no longer has (a scale-down) go."""
        r = self.r
        wanted = {self.layout.pod_name(t, i): (t, i) for t, i in pod_slots(self.layout)}
        for service in r.observed.job_services:
            name = pod_name(service)
            if name not in wanted and controlled_by(service, r.job) and not terminating(service):
                r.plan.delete_pod_services.append(name)
        foreign: list[str] = []
        for name, (rtype, index) in wanted.items():
            found = r.observed.service_named(name)
            if found is None:
                r.plan.create_pod_services.append(self.desired.pod_service(rtype, index))
            elif not controlled_by(found, r.job):
                foreign.append(name)
        if not foreign:
            return True
        message = (
            f"Service {', '.join(foreign[:5])}{' …' if len(foreign) > 5 else ''} already exists and is "
            f"not owned by {r.title}: delete or rename it; no pods are created until then"
        )
        if st.set_not_running(r.status, st.REASON_SERVICE_CONFLICT, message, r.now):
            r.event("Warning", st.REASON_SERVICE_CONFLICT, message)
        return False

    def gang_ok(self) -> bool:
        r = self.r
        decision = gang.decide(self.desired, r.observed.pod_group, r.observed.pod_group_crd_installed)
        r.plan.create_pod_group = decision.create_pod_group
        if decision.waiting is not None and not st.is_true(r.status, st.RUNNING):
            reason, message, event_reason = decision.waiting
            if st.set_not_running(r.status, reason, message, r.now) and event_reason:
                r.event("Warning", event_reason, message)
        return decision.may_create_pods

    def restart(
        self,
        retries: list[tuple[str, dict[str, Any], rs.Verdict]],
        tallies: dict[str, rs.TypeRestarts],
        limit: int | None,
    ) -> None:
        r = self.r
        messages: list[str] = []
        for rtype, pod, verdict in retries:
            r.delete([pod_name(pod)])
            tallies[rtype].recreations += 1
            messages.append(f"{verdict.detail}; recreating it")
        for rtype, tally in tallies.items():
            if tally.in_place:
                messages.append(f"{tally.in_place} in-place container restart(s) of {rtype} pods")
        if not messages:
            return
        total = sum(t.total for t in tallies.values())
        suffix = f" (restart {total} of backoffLimit {limit})" if limit is not None else f" (restart {total})"
        for m in messages:
            r.event("Warning", st.REASON_RESTARTING, m + suffix)
        st.set_restarting(r.status, f"{r.title} is restarting: " + "; ".join(messages) + suffix, r.now)

    def create_missing(self, tallies: dict[str, rs.TypeRestarts]) -> None:
        r = self.r
        handed: set[str] = set()
        for rtype, index in pod_slots(self.layout):
            if (rtype, index) in self.slots:
                continue
            prior = 0
            if rtype not in handed:
                prior = tallies[rtype].unattributed
                handed.add(rtype)
            r.plan.create_pods.append(self.desired.pod(rtype, index, prior_restarts=prior))
        if (r.plan.create_pods or self.slots) and not r.status.get("startTime"):
            r.status["startTime"] = st.format_time(r.now)

    def update_running(self, tallies: dict[str, rs.TypeRestarts]) -> None:
        r = self.r
        if any(t.recreations or t.in_place for t in tallies.values()) or r.plan.create_pods:
            return
        counts = self.counts(exclude_deleting=True)
        wanted = self.layout.total_replicas
        active = sum(c.active for c in counts.values())
        settled = sum(c.active + c.succeeded for c in counts.values())
        if active > 0 and settled == wanted:
            st.set_running(r.status, st.REASON_RUNNING, f"{r.title} is running.", r.now)

    def write_replica_statuses(self, tallies: dict[str, rs.TypeRestarts], *, finished: bool = False) -> None:
        counts = self.counts(exclude_deleting=True, keep_finished=finished)
        created: dict[str, int] = {}
        for pod in self.r.plan.create_pods:
            rtype = pod["metadata"]["labels"][LABEL_REPLICA_TYPE]
            created[rtype] = created.get(rtype, 0) + 1
        self.r.status["replicaStatuses"] = {
            rtype: {
                "active": c.active,
                "pending": c.pending + created.get(rtype.lower(), 0),  # pods being created count as pending
                "succeeded": c.succeeded,
                "failed": c.failed,
                "restarts": tallies[rtype].total,
                "selector": replica_selector(self.layout, rtype),
            }
            for rtype, c in counts.items()
        }
        # Totals for the printer columns Replicas and Active (a column cannot sum a map).
        self.r.status["replicas"] = self.layout.total_replicas
        self.r.status["active"] = sum(c.active for c in counts.values())
