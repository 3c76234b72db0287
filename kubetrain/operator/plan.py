"""The pure reconcile: (job, observed children, now, config) → Plan. No I/O, no clock.

How the controller uses a Plan (in this order; see docs/architecture.md):
1. `delete_job`: DELETE the job (children follow through ownerReferences); nothing else.
2. `create_service`, then `create_pod_group`; `delete_service`, `delete_pod_group`; then the
   HorizontalPodAutoscaler: `create_hpa`, `update_hpa` (a PUT carrying the observed
   resourceVersion; 409 → requeue), `delete_hpa`.
3. `delete_pods` (names; expect the deletes), then `create_pods` (dicts; expect the creates).
4. `status`: when not None, write it to the `/status` subresource with the job's
   resourceVersion (409 → requeue; the next plan starts from the fresh job).
5. `events`: record them on the job (after the status write succeeded, or when status is None).
6. `requeue_at`: add the job's key to the work queue at exactly that time.
What it must feed back: the job as last written (so the persisted restart counts are seen),
the job's pods, its Service, PodGroup and HPA from the cache, whether the PodGroup API is installed;
and it must not call `plan` for a job while expected creates/deletes are not observed yet.

This module holds the reconcile's frame (conditions, finished jobs, TTL); `active.py` the part
for a valid job that is not finished yet.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubetrain.api.validation import DEFAULT_MAX_REPLICAS
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.env import JobLayout
from kubetrain.operator import runpolicy
from kubetrain.operator import status as st
from kubetrain.operator.active import ActiveJob, controlled_by, pod_name, terminating
from kubetrain.operator.children import ANNOTATION_HPA_SPEC_HASH, build_hpa
from kubetrain.operator.prepare import DEFAULT_CACHE, JobCache, PreparedJob

MAX_EVENT_MESSAGE = 1024


@dataclass(frozen=True, slots=True)
class EventSpec:
    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass
class Observed:
    pods: list[dict[str, Any]]
    service: dict[str, Any] | None = None
    pod_group: dict[str, Any] | None = None
    pod_group_crd_installed: bool = True
    hpa: dict[str, Any] | None = None  # the HorizontalPodAutoscaler of the job's name


@dataclass
class PlannerConfig:
    gang_scheduler: str = "none"  # none | volcano | scheduler-plugins
    scheduler_name: str | None = None
    max_replicas: int = DEFAULT_MAX_REPLICAS  # a job over this total is refused like an invalid spec


@dataclass
class Plan:
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    create_service: dict[str, Any] | None = None
    delete_service: bool = False
    create_pod_group: dict[str, Any] | None = None
    delete_pod_group: bool = False
    create_hpa: dict[str, Any] | None = None
    update_hpa: dict[str, Any] | None = None  # the whole HPA, with the observed resourceVersion
    delete_hpa: bool = False
    status: dict[str, Any] | None = None  # the new status when it changed, else None
    events: list[EventSpec] = field(default_factory=list)
    requeue_at: datetime | None = None
    delete_job: bool = False

    @property
    def empty(self) -> bool:
        return self == Plan()


def plan(
    job: Mapping[str, Any],
    observed: Observed,
    now: datetime,
    config: PlannerConfig,
    *,
    cache: JobCache | None = None,
) -> Plan:
    """One reconcile of `job` (the wire dict as stored). See the module docstring."""
    if not runpolicy.is_managed(job):
        return Plan()
    meta = job.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Plan()
    prepared = (cache if cache is not None else DEFAULT_CACHE).get(
        job, gang_scheduling=config.gang_scheduler != "none", max_replicas=config.max_replicas
    )
    if prepared.framework is None:
        return Plan()
    return Reconcile(job, prepared, prepared.framework, observed, now, config).run()


class Reconcile:
    def __init__(
        self,
        job: Mapping[str, Any],
        prepared: PreparedJob,
        framework: Framework,
        observed: Observed,
        now: datetime,
        config: PlannerConfig,
    ) -> None:
        self.job, self.prepared, self.fw, self.observed = job, prepared, framework, observed
        self.now, self.config = now, config
        meta = job.get("metadata") or {}
        self.title = f"{job.get('kind')} {meta.get('name')}"
        raw_status = job.get("status")
        self.old: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
        self.status: dict[str, Any] = copy.deepcopy(self.old)
        self.plan = Plan()
        self.pods = [p for p in observed.pods if controlled_by(p, job)]
        self.deleting: set[str] = set()
        spec = prepared.defaulted.get("spec")
        self.spec: Mapping[str, Any] = spec if isinstance(spec, Mapping) else {}

    # --- helpers -------------------------------------------------------------------------------
    def event(self, etype: str, reason: str, message: str) -> None:
        self.plan.events.append(EventSpec(etype, reason, message[:MAX_EVENT_MESSAGE]))

    def live_pods(self) -> list[dict[str, Any]]:
        return [p for p in self.pods if not terminating(p) and pod_name(p) not in self.deleting]

    def delete(self, names: list[str]) -> None:
        for name in names:
            if name not in self.deleting:
                self.deleting.add(name)
                self.plan.delete_pods.append(name)

    # --- the reconcile ------------------------------------------------------------------------
    def run(self) -> Plan:
        generation = (self.job.get("metadata") or {}).get("generation")
        if isinstance(generation, int):
            self.status["observedGeneration"] = generation
        if self.prepared.adjustments and self.old.get("observedGeneration") != generation:
            for adjustment in self.prepared.adjustments:  # once per spec generation
                self.event("Warning", "SpecAdjusted", f"{self.title}: {adjustment}")
        active: ActiveJob | None = None
        if st.terminal_condition(self.old) is None:
            st.set_condition(
                self.status, st.CREATED, True, st.REASON_CREATED, f"{self.title} is created.", self.now
            )
            layout = self.prepared.layout
            if layout is None:
                message = f"{self.title} has an invalid spec: " + "; ".join(self.prepared.errors)
                self.terminal(st.FAILED, st.REASON_INVALID_SPEC, message, delete_active=False)
            else:
                active = ActiveJob(self, layout)
                active.run()
        if st.terminal_condition(self.status) is not None:
            self.finished()
            if self.plan.delete_job:
                return Plan(delete_job=True)  # children follow through ownerReferences
            if active is not None:
                # Recount: pods that cleanPodPolicy deletes now are no longer active, so the
                # last status a finished job gets does not show pods that are gone.
                active.write_replica_statuses(active.tallies, finished=True)
        elif active is not None:
            self.autoscaler(active.layout)
        if st.status_changed(self.old, self.status):
            self.plan.status = self.status
        return self.plan

    def terminal(self, ctype: str, reason: str, message: str, *, delete_active: bool) -> None:
        st.set_terminal(self.status, ctype, reason, message, self.now)
        self.event("Normal" if ctype == st.SUCCEEDED else "Warning", reason, message)
        if delete_active:
            self.delete([pod_name(p) for p in self.live_pods() if runpolicy.is_active_pod(p)])

    def finished(self) -> None:
        """cleanPodPolicy, Service and PodGroup removal, TTL — on every reconcile of a finished job."""
        policy = runpolicy.clean_pod_policy(self.spec)
        self.delete(runpolicy.pods_to_clean(policy, self.live_pods()))
        service, group = self.observed.service, self.observed.pod_group
        if policy in ("All", "Running") and service is not None and controlled_by(service, self.job):
            self.plan.delete_service = True
        if group is not None and controlled_by(group, self.job):
            self.plan.delete_pod_group = True
        hpa = self.observed.hpa
        if hpa is not None and controlled_by(hpa, self.job) and not terminating(hpa):
            self.plan.delete_hpa = True
        expiry = runpolicy.ttl_expiry(self.spec, st.parse_time(self.status.get("completionTime")))
        if expiry is not None:
            # The reconcile that finishes the job records status and events first; the job is
            # deleted by a later one (requeue_at may then already be due: ttl 0).
            if self.now >= expiry and st.terminal_condition(self.old) is not None:
                self.plan.delete_job = True
            else:
                self.plan.requeue_at = runpolicy.earliest(self.plan.requeue_at, expiry)

    def autoscaler(self, layout: JobLayout) -> None:
        """The job's HorizontalPodAutoscaler (docs/behaviour.md §4) while it is not finished:
        created when missing, replaced when the spec the job asks for (elasticPolicy bounds and
        metrics) hashes differently from the one kubetrain last wrote, deleted when the job asks
        for none. An HPA of that name the job does not own is left alone."""
        observed = self.observed.hpa
        if observed is not None and (not controlled_by(observed, self.job) or terminating(observed)):
            return
        wanted = build_hpa(layout)
        if wanted is None:
            if observed is not None:
                self.plan.delete_hpa = True
            return
        if observed is None:
            self.plan.create_hpa = wanted
            return
        meta: dict[str, Any] = copy.deepcopy(observed.get("metadata") or {})
        annotations = meta.get("annotations") or {}
        wanted_hash = wanted["metadata"]["annotations"][ANNOTATION_HPA_SPEC_HASH]
        if annotations.get(ANNOTATION_HPA_SPEC_HASH) == wanted_hash:
            return
        meta["labels"] = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
        meta["annotations"] = {**annotations, **wanted["metadata"]["annotations"]}
        meta["ownerReferences"] = wanted["metadata"]["ownerReferences"]
        self.plan.update_hpa = {**wanted, "metadata": meta}
