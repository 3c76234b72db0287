"""The TrainJob's edge of the planner: a Kubeflow Trainer v2 TrainJob and its runtime turned
into what the one planner (`plan.Reconcile`) plans every job from — its `JobShape` and the
record of its run — and the record kept where a TrainJob keeps it. Pure; no planning decision
is made here (docs/behaviour.md, "TrainJob").

What only a TrainJob has, all here:

- another controller's TrainJob (`spec.managedBy`, MultiKueue's) is left alone;
- its runtime snapshot: at the first reconcile the runtime is copied into the
  `<tj>-runtime-snapshot` ConfigMap and the TrainJob runs from that copy ever after (a later
  runtime edit changes no running job); a runtime that does not exist yet is a Warning event
  (`RuntimeNotFound`, the TrainJob waits), one that cannot be resolved, or that breaks a rule
  admission checks against the runtime (`validate.build_errors`: the runtime may have changed
  since the TrainJob was admitted), fails it (`TrainingRuntimeNotSupported`, naming each field);
  either way its `Suspended` condition follows `spec.suspend`,
  as Trainer sets it after the runtime lookup;
- the PersistentVolumeClaims of the runtime's volumeClaimPolicies created at that first
  reconcile too (even while suspended, as JobSet does), and before the first pods;
- the snapshot resolved into the TrainJob's shape (`jobs/trainjob/shape.py`: groups, run
  policy, JobSet's failure model, Trainer's status projection, JobSet's children and gang
  policy) for the operator's configuration;
- the run's record (whole-gang restarts, failures per job of each replicated job, the
  attempt's start) read from the snapshot and, when the planner changed it (`Plan.record`),
  written back into it — or into the snapshot being created.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.errors import QUOTE, format_errors
from kubetrain.api.trainer import constants as c
from kubetrain.jobs.shape import FAILED
from kubetrain.jobs.trainjob import children as ch
from kubetrain.jobs.trainjob.model import ResolvedTrainJob
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.shape import run_policy_of, trainjob_shape
from kubetrain.jobs.trainjob.validate import build_errors
from kubetrain.operator.draft import Draft, Observed, Plan, PlannerConfig
from kubetrain.operator.plan import Reconcile
from kubetrain.operator.pods import owned_by_name
from kubetrain.operator.prepare import PreparedJob
from kubetrain.operator.statusprojection import TRAINER

Obj = dict[str, Any]


def plan_trainjob(
    job: Mapping[str, Any],
    observed: Observed,
    runtime: Mapping[str, Any] | None,
    now: datetime,
    config: PlannerConfig,
) -> Plan:
    """One reconcile of a TrainJob; `runtime` is the live runtime its runtimeRef names (None: not
    found), read only until the snapshot exists."""
    meta = job.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Plan()
    if run_policy_of(job, {}).managed_by not in (None, c.TRAINJOB_CONTROLLER):
        return Plan()  # another controller's (MultiKueue): left alone
    snapshot = snapshot_of(job, observed)
    record: Obj = {}
    frozen: Obj | None = None
    if snapshot is not None:
        frozen, record = ch.read_snapshot(snapshot)
    finished = TRAINER.finished(_status(job)) is not None
    if snapshot is None and not finished:
        frozen = dict(runtime) if runtime is not None else None
    if finished:  # planned from the snapshot it ran with, if any (its TTL is the runtime's)
        domain = config.cluster_domain
        resolved = resolve(job, frozen, cluster_domain=domain)[0] if frozen is not None else None
        prepared = _prepared(job, frozen, resolved, config)
        return Reconcile(job, prepared, observed, now, config, projection=TRAINER, record=record).run()
    if frozen is None:
        kind, name = ch.runtime_ref(job)
        d = Draft(job, observed, now, config)
        d.event(
            "Warning",
            "RuntimeNotFound",
            f"{kind} {QUOTE.encode(name)} does not exist: the TrainJob starts once it is created",
        )
        return _suspended(d, job)
    resolved, errors = resolve(job, frozen, cluster_domain=config.cluster_domain)
    seen = {e.path for e in errors}
    errors += [e for e in build_errors(job, frozen) if e.path not in seen]
    if resolved is None or errors:
        return _not_supported(job, observed, now, config, format_errors(errors))
    prepared = _prepared(job, frozen, resolved, config)
    p = Reconcile(job, prepared, observed, now, config, record=record).run()
    kept = p.record
    p.record = None
    if snapshot is None:  # first: the snapshot, with the record when the planner made one
        p.create_children[0:0] = [
            ch.build_snapshot(job, frozen, kept if kept is not None else record),
            *_claims(prepared, p.create_children),
        ]
    elif kept is not None:
        updated = copy.deepcopy(snapshot)
        updated.setdefault("data", {})[ch.STATE_KEY] = json.dumps(kept, sort_keys=True)
        p.update_children.append(updated)
    return p


def _claims(prepared: PreparedJob, planned: list[Obj]) -> list[Obj]:
    """The PVCs (the shape's `unread_prerequisites`), at the first reconcile even when no pod is
    created yet (suspended, the gang waiting), as JobSet creates them for a suspended JobSet;
    none the plan has already (it creates them with its first pods)."""
    children = prepared.shape.children if prepared.shape is not None else None
    if children is None:
        return []
    names = {(o.get("kind"), (o.get("metadata") or {}).get("name")) for o in planned}
    return [o for o in children.unread_prerequisites() if (o["kind"], o["metadata"]["name"]) not in names]


def snapshot_of(job: Mapping[str, Any], observed: Observed) -> Obj | None:
    """The TrainJob's own snapshot ConfigMap (`pods.owned_by_name`: one left by an earlier
    TrainJob of the name is not its snapshot)."""
    name = ch.snapshot_name(str((job.get("metadata") or {}).get("name", "")))
    snapshot = owned_by_name(observed.extra, job).get(name)
    return dict(snapshot) if snapshot is not None else None


def _status(job: Mapping[str, Any]) -> Obj:
    status = job.get("status")
    return status if isinstance(status, dict) else {}


def _prepared(
    job: Mapping[str, Any],
    frozen: Mapping[str, Any] | None,
    resolved: ResolvedTrainJob | None,
    config: PlannerConfig,
) -> PreparedJob:
    """The TrainJob prepared from the runtime it runs with, `resolved`: its shape, or — no
    runtime, or one that cannot be resolved (a finished job's) — only its run policy."""
    jobset = ch.jobset_spec(frozen or {})
    policy = run_policy_of(job, jobset)
    if resolved is None:
        return PreparedJob(framework=None, layout=None, run_policy=policy)
    shape = trainjob_shape(job, resolved, jobset, TRAINER, config.gang_scheduler)
    return PreparedJob(framework=None, layout=shape.layout, shape=shape, run_policy=shape.run_policy)


def _not_supported(
    job: Mapping[str, Any], observed: Observed, now: datetime, config: PlannerConfig, message: str
) -> Plan:
    """The runtime cannot run this TrainJob: Failed, with Trainer's reason."""
    d = Draft(job, observed, now, config)
    TRAINER.set_finished(d.status, FAILED, c.REASON_RUNTIME_NOT_SUPPORTED, message, now)
    d.event("Warning", c.REASON_RUNTIME_NOT_SUPPORTED, message)
    d.delete_active()
    return _suspended(d, job)


def _suspended(d: Draft, job: Mapping[str, Any]) -> Plan:
    """The plan of a TrainJob the planner does not run (no runtime, or one that cannot run it),
    with its `Suspended` condition set all the same: Trainer's Reconcile calls
    setSuspendedCondition after the runtime lookup whatever it found (True while
    `spec.suspend`, False `Resumed` once a suspended job is resumed)."""
    if run_policy_of(job, {}).suspend:
        changed = TRAINER.set_suspended(d.status, "", d.now)
    else:
        changed = TRAINER.set_resumed(d.status, "", d.now)
    if changed is not None:
        d.event("Normal", *changed)
    if d.status != d.old:
        d.plan.status = d.status
    return d.plan
