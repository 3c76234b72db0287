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

This module holds the reconcile's frame (conditions, finished jobs, TTL, the autoscaler);
`active.py` the part for a valid job that is not finished yet. Both write into one explicit
`ReconcileDraft` (`draft.py`); the children they compare with what they observe come from one
`desired_children(...)` (`desired.py`), the same `kubetrain render` prints.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.gangschedulers import defaults_min_available
from kubetrain.api.labels import ANNOTATION_HPA_SPEC_HASH
from kubetrain.jobs.shape import FAILED, SUCCEEDED
from kubetrain.operator import runpolicy
from kubetrain.operator import status as st
from kubetrain.operator.active import ActivePart, active_part
from kubetrain.operator.desired import DesiredChildren, desired_children
from kubetrain.operator.draft import EventSpec, Observed, Plan, PlannerConfig, ReconcileDraft
from kubetrain.operator.pods import controlled_by, pod_name, pod_phase, terminating
from kubetrain.operator.prepare import DEFAULT_CACHE, JobCache, PreparedJob
from kubetrain.operator.slots import phase_counts, slot_pods
from kubetrain.operator.tensorboard import plan_tensorboard

__all__ = ["EventSpec", "Observed", "Plan", "PlannerConfig", "Reconcile", "plan"]


def plan(
    job: Mapping[str, Any],
    observed: Observed,
    now: datetime,
    config: PlannerConfig,
    *,
    cache: JobCache | None = None,
) -> Plan:
    """One reconcile of `job` (the wire dict as stored). See the module docstring."""
    managed = runpolicy.is_managed(job)
    meta = job.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Plan()
    prepared = (cache if cache is not None else DEFAULT_CACHE).get(
        job,
        gang_scheduling=defaults_min_available(config.gang_scheduler),
        max_replicas=config.max_replicas,
        service_mode=config.service_mode,
        cluster_domain=config.cluster_domain,
    )
    if prepared.framework is None:  # a kind kubetrain does not know
        return Plan()
    if not managed:
        return others_ttl(job, prepared, now)
    return Reconcile(job, prepared, observed, now, config).run()


def others_ttl(job: Mapping[str, Any], prepared: PreparedJob, now: datetime) -> Plan:
    """A job another controller manages (`managedBy`, e.g. MultiKueue's copy in its manager
    cluster): no pods, no status write — only its `ttlSecondsAfterFinished`, once the status that
    controller wrote is finished, deletes it (or wakes the job at that instant), as JobSet does for
    an externally managed JobSet (JobSet issue 1310) and Kubernetes' TTL controller for a Job."""
    shape = prepared.shape
    status = job.get("status") or {}
    if shape is None or shape.status.finished(status) is None:
        return Plan()
    expiry = runpolicy.ttl_expiry(
        shape.run_policy, shape.status.finished_at(status) or st.finished_since(status)
    )
    if expiry is None:
        return Plan()
    return Plan(delete_job=True) if now >= expiry else Plan(requeue_at=expiry)


class Reconcile(ReconcileDraft):
    """One reconcile of a job its producer prepared into a shape, whatever its kind — the v1
    kinds through `plan` (prepared here, cached), a TrainJob through its edge (`trainedge.py`:
    the shape resolved from its runtime snapshot, the run's `record` kept there): the frame
    (conditions, the finished job's clean-up and TTL, the autoscaler) around the shape's active
    part. `Reconcile(...).run()` gives the Plan."""

    # --- the reconcile ------------------------------------------------------------------------
    def run(self) -> Plan:
        """The plan, its reasons written as the job's API group names them (`in_api`)."""
        return self.in_api(self.decide())

    def decide(self) -> Plan:
        projection = self.projection
        recorded_terminal = projection.finished(self.old)
        if recorded_terminal is not None and not self.finish_trusted(recorded_terminal):
            return self.plan
        generation = (self.job.get("metadata") or {}).get("generation")
        projection.observe_generation(self.status, generation)
        if self.prepared.adjustments and self.old.get("observedGeneration") != generation:
            for adjustment in self.prepared.adjustments:  # once per spec generation
                self.event("Warning", "SpecAdjusted", f"{self.title}: {adjustment}")
        active: ActivePart | None = None
        if recorded_terminal is None:
            projection.set_created(self.status, self.title, self.now)
            shape = self.prepared.shape
            if shape is None:
                message = f"{self.title} has an invalid spec: " + "; ".join(self.prepared.errors)
                self.terminal(st.FAILED, st.REASON_INVALID_SPEC, message, delete_active=False)
            else:
                desired = desired_children(
                    shape,
                    gang_scheduler=self.config.gang_scheduler,
                    scheduler_name=self.config.scheduler_name,
                    progress=self.config.progress,
                )
                active = active_part(self, shape, desired)
                active.run()
        if projection.finished(self.status) is not None:
            self.finished()
            if self.plan.delete_job:
                return Plan(delete_job=True)  # children follow through ownerReferences
            if active is not None:
                active.finish()
        elif active is not None:
            self.autoscaler(active.desired)
        shape = self.prepared.shape
        if shape is None or shape.tensorboard:
            plan_tensorboard(self, self.prepared.layout)
        if projection.changed(self.old, self.status):
            self.plan.status = self.status
            outcome = projection.finished(self.status)
            self.plan.finishes = outcome is not None
            self.plan.outcome = outcome if outcome != recorded_terminal else None
            added = projection.restarts(self.status) - projection.restarts(self.old)
            self.plan.recorded_restarts = max(0, added)
        return self.plan

    def finish_trusted(self, terminal: str) -> bool:
        """Whether a terminal condition found in the status may be acted on (clean-up, TTL):
        this operator process wrote it, or the job's pods bear it out — none of them is still
        running or pending, a Succeeded job's pods meet the framework's success rule, a Failed
        job has a failed pod (an invalid spec fails a job whatever its pods). A status written by
        someone else (anyone with write access to the status subresource) deletes nothing:
        the job is left as it is, with a Warning event, until its pods end."""
        if self.observed.terminal_recorded:
            return True
        active = [p for p in self.live_pods() if runpolicy.is_active_pod(p)]
        shape = self.prepared.shape
        if not active or shape is None:
            return not active or terminal == FAILED
        slots, _ = slot_pods(shape, self.pods)
        if terminal == SUCCEEDED:
            if shape.succeeded(phase_counts(shape, slots)):
                return True
        elif any(pod_phase(p) == "Failed" for p in slots.values() if not terminating(p)):
            return True
        self.event(
            "Warning",
            st.REASON_UNVERIFIED_STATUS,
            f"{self.title}: its status says {terminal}, which kubetrain did not record and its pods "
            f"do not show ({len(active)} still running or pending); nothing is deleted until they end",
        )
        return False

    def finished(self) -> None:
        """cleanPodPolicy, Service and PodGroup removal, TTL — on every reconcile of a finished job."""
        policy = self.run_policy.clean_pod_policy
        self.delete(runpolicy.pods_to_clean(policy, self.live_pods()))
        if not self.run_policy.finished_keeps_children:
            self.finished_children(policy)
        else:  # the Service stays (a JobSet's does), but no finished gang holds its queue's quota
            self.finished_pod_group()
        expiry = runpolicy.ttl_expiry(self.run_policy, self.projection.finished_at(self.status))
        if expiry is None:
            return
        # The reconcile that finishes the job records status and events first; the TTL acts in
        # a later one (requeue_at may then already be due: ttl 0).
        if self.now >= expiry and self.projection.finished(self.old) is not None:
            if self.run_policy.ttl_deletes_job:
                self.plan.delete_job = True
            else:  # the job stays: its pods go, as its own controller's TTL would take them
                self.delete([pod_name(p) for p in self.pods if not terminating(p)])
        else:
            self.plan.requeue_at = runpolicy.earliest(self.plan.requeue_at, expiry)

    def finished_children(self, policy: str) -> None:
        """The Service(s), PodGroup and autoscaler of a finished job."""
        service = self.observed.service
        if policy in ("All", "Running") and service is not None and controlled_by(service, self.job):
            self.plan.delete_service = True
        if policy in ("All", "Running"):  # per-pod service mode: every pod's Service
            self.plan.delete_pod_services = [
                pod_name(s)
                for s in self.observed.job_services
                if pod_name(s) != pod_name(self.job) and controlled_by(s, self.job) and not terminating(s)
            ]
        self.finished_pod_group()
        hpa = self.observed.hpa
        if hpa is not None and controlled_by(hpa, self.job) and not terminating(hpa):
            self.plan.delete_hpa = True

    def finished_pod_group(self) -> None:
        """A finished job's PodGroup, for every kind: kept, it would go on holding its
        `minResources` in the gang scheduler's queue (Volcano even re-queues a Completed group
        whose pods are gone — Kubeflow Trainer issue 4033, Volcano issue 4195)."""
        group = self.observed.pod_group
        if group is not None and controlled_by(group, self.job):
            self.plan.delete_pod_group = True

    def autoscaler(self, desired: DesiredChildren) -> None:
        """The job's HorizontalPodAutoscaler (docs/behaviour.md §4) while it is not finished:
        created when missing, replaced when the spec the job asks for (`Framework.autoscaling`:
        bounds and metrics) hashes differently from the one kubetrain last wrote, deleted when the job asks
        for none. An HPA of that name the job does not own is left alone."""
        observed = self.observed.hpa
        if observed is not None and (not controlled_by(observed, self.job) or terminating(observed)):
            return
        wanted = desired.hpa
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
