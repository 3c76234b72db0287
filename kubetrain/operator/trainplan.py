"""The reconcile of a Kubeflow Trainer v2 TrainJob: (TrainJob, its runtime, observed children,
now) → Plan, carried out by the same `PlanApplier` as every job (docs/behaviour.md, "TrainJob").
Pure.

What JobSet + the Job controller would do, done directly on pods:
- at the first reconcile the runtime is copied into the `<tj>-runtime-snapshot` ConfigMap and
  the TrainJob runs from that copy ever after (a later runtime edit changes no running job);
- steps (replicated jobs) start when the steps they `dependsOn` are Ready / Complete (and, with
  `startupPolicy: InOrder`, once the steps before them have started: `jobsetpolicy.py`);
- a failed pod is recreated until its step's `backoffLimit` is exceeded (restartPolicy Never:
  failed pods; OnFailure: container restarts), then the step's job fails; the template's
  `failurePolicy.maxRestarts` restarts every pod as a new attempt (`jobset.sigs.k8s.io/restart-attempt`)
  that many times (`restartStrategy: BlockingRecreate`: the new attempt's pods only once every
  pod of the earlier one is gone), then the TrainJob fails (`FailedJobs`, or
  `ReachedMaxRestarts` after restarts);
- the success policy (All / Any of the target steps) completes it (`AllJobsCompleted`);
- `suspend` deletes the pods (`Suspended` condition), resuming recreates them; the deadline
  (`activeDeadlineSeconds`, from creation or the last resume) fails it (`DeadlineExceeded`).
Conditions are only Trainer's `Suspended`, `Complete`, `Failed`; `jobsStatus` one entry per step.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.errors import format_errors
from kubetrain.api.gangschedulers import GangScheduler
from kubetrain.api.trainer import constants as c
from kubetrain.jobs.shape import FAILED, SUCCEEDED, JobShape
from kubetrain.jobs.trainjob import children as ch
from kubetrain.jobs.trainjob.gang import decorate, gang_of
from kubetrain.jobs.trainjob.model import ResolvedTrainJob
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.shape import run_policy_of, trainjob_shape
from kubetrain.operator import creates, groupfailure, runpolicy, trainprogress
from kubetrain.operator.draft import Observed, Plan, PlannerConfig
from kubetrain.operator.jobchildren import build_pod_group
from kubetrain.operator.pods import controlled_by, pod_name, terminating
from kubetrain.operator.slots import phase_counts, slot_pods
from kubetrain.operator.statusprojection import TRAINER
from kubetrain.operator.trainstatus import TrainJobDraft, jobs_status

Obj = dict[str, Any]
MESSAGE_COMPLETED = "jobset completed successfully"


def plan_trainjob(
    job: Mapping[str, Any],
    observed: Observed,
    runtime: Mapping[str, Any] | None,
    now: datetime,
    config: PlannerConfig,
) -> Plan:
    """One reconcile of a TrainJob; `runtime` is the live runtime its runtimeRef names (None: not
    found), read only until the snapshot exists."""
    d = TrainJobDraft(job, observed, now, config)
    meta = job.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Plan()
    if run_policy_of(job, {}).managed_by not in (None, c.TRAINJOB_CONTROLLER):
        return Plan()  # another controller's (MultiKueue): left alone
    if TRAINER.finished(d.status) is not None:
        d.delete_active()
        _ttl_after_finished(d)
        return d.finish()
    # Only this TrainJob's own: a ConfigMap left by an earlier TrainJob of the name (being
    # garbage-collected) is not its snapshot.
    owned = [cm for cm in observed.extra if controlled_by(cm, job)]
    snapshot = next(
        (cm for cm in owned if (cm.get("metadata") or {}).get("name") == ch.snapshot_name(d.name)), None
    )
    state: Obj = {}
    if snapshot is not None:
        frozen, state = ch.read_snapshot(snapshot)
    else:
        frozen = dict(runtime) if runtime is not None else None
    if frozen is None:
        kind, name = ch.runtime_ref(job)
        d.event(
            "Warning",
            "RuntimeNotFound",
            f"{kind} {name!r} does not exist: the TrainJob starts once it is created",
        )
        return d.finish()
    resolved, errors = resolve(job, frozen)
    if resolved is None:
        d.terminal(FAILED, c.REASON_RUNTIME_NOT_SUPPORTED, format_errors(errors))
        return d.finish()
    shape = trainjob_shape(job, resolved, ch.jobset_spec(frozen), TRAINER)
    if snapshot is None:
        d.plan.create_children.append(ch.build_snapshot(job, frozen, state))
    if shape.run_policy.suspend:
        _suspend(d, resolved, shape)
        return d.finish()
    resumed = shape.status.set_resumed(d.status, d.title, now)
    if resumed is not None:
        d.event("Normal", *resumed)
    if _deadline_passed(d, shape):
        d.terminal(FAILED, c.REASON_DEADLINE_EXCEEDED, c.MESSAGE_DEADLINE_EXCEEDED)
        d.status["jobsStatus"] = jobs_status(d, resolved, failed_steps=set())
        return d.finish()
    if observed.service is None:
        d.plan.create_service = ch.build_service(resolved, job)
    _policy_children(d, resolved)
    trainprogress.ca_children(d.job, d.config.progress, d.observed.extra, d.plan)
    gang = _gang(d, resolved, shape)
    new_state = _run(d, resolved, shape, state, gang)
    if snapshot is not None and new_state != state:
        updated = copy.deepcopy(snapshot)
        updated.setdefault("data", {})[ch.STATE_KEY] = json.dumps(new_state, sort_keys=True)
        d.plan.update_children.append(updated)
    elif snapshot is None and new_state != state:
        d.plan.create_children[0] = ch.build_snapshot(job, frozen, new_state)
    return d.finish()


def _gang(d: TrainJobDraft, resolved: ResolvedTrainJob, shape: JobShape) -> GangScheduler | bool | None:
    """The gang scheduler the pods are decorated for (None: no gang), or False: pods must wait
    (the PodGroup is being created, or not yet admitted by a scheduler that admits)."""
    wanted = gang_of(resolved, d.config.gang_scheduler)
    if wanted.mismatch:
        if not d.pods:
            d.event("Warning", "PodGroupPolicyNotServed", wanted.mismatch)
        return None
    gang = wanted.scheduler
    if gang is None:
        return None
    if not d.observed.pod_group_crd_installed:
        if not d.pods:
            d.event("Warning", "PodGroupAPIMissing", f"the PodGroup API {gang.api_version} is not installed")
        return False
    if d.observed.pod_group is None:
        d.plan.create_pod_group = build_pod_group(shape, gang.name)
        return False if gang.waits_for_admission else gang
    if gang.waits_for_admission and ((d.observed.pod_group.get("status") or {}).get("phase") or "") in (
        "",
        "Pending",
    ):
        return False
    return gang


def _policy_children(d: TrainJobDraft, resolved: ResolvedTrainJob) -> None:
    """The ML policy's objects (MPI: SSH Secret, hostfile ConfigMap): created, before any pod,
    while the ConfigMap is missing (the Secret is create-only: 409 counts as done); the
    ConfigMap's data replaced when it differs."""
    if not resolved.extra:
        return
    observed = {
        (cm.get("metadata") or {}).get("name"): cm for cm in d.observed.extra if controlled_by(cm, d.job)
    }
    wanted = [ch.owned(obj, d.job) for obj in resolved.extra]
    config_maps = [w for w in wanted if w["kind"] == "ConfigMap"]
    if any(cm["metadata"]["name"] not in observed for cm in config_maps):
        d.plan.create_children += wanted
        return
    for cm in config_maps:
        current = observed[cm["metadata"]["name"]]
        if current.get("data") != cm.get("data"):
            d.plan.update_children.append({**current, "data": cm["data"]})


def _stalled(
    d: TrainJobDraft, resolved: ResolvedTrainJob, shape: JobShape, state: Obj, attempt: str
) -> Obj | None:
    """Progress deadline exceeded (trainprogress.py): the state after a whole-gang restart or
    after failing the TrainJob; None while it is not stalled."""
    pods = [
        p for p in d.live_pods() if (p["metadata"].get("labels") or {}).get(c.RESTART_ATTEMPT, "0") == attempt
    ]
    gang_policy = shape.failure.gang
    max_restarts = gang_policy.max_restarts if gang_policy is not None else 0
    stall = trainprogress.decide(d.job, state, pods, d.now, max_restarts)
    if stall.new_state is None:
        d.plan.requeue_at = trainprogress.earlier(d.plan.requeue_at, stall.due)
    elif stall.restart:
        d.delete([pod_name(p) for p in d.live_pods()])
        d.plan.restarts += 1
        d.event("Warning", trainprogress.REASON, stall.message)
    else:
        d.terminal(FAILED, trainprogress.REASON, stall.message)
        d.status["jobsStatus"] = jobs_status(d, resolved, failed_steps=set())
    return stall.new_state


def _suspend(d: TrainJobDraft, resolved: ResolvedTrainJob, shape: JobShape) -> None:
    suspended = shape.status.set_suspended(d.status, d.title, d.now)
    if suspended is not None:
        d.event("Normal", *suspended)
    d.delete([pod_name(p) for p in d.live_pods()])
    d.status["jobsStatus"] = [
        {"name": s.name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": s.replicas}
        for s in resolved.steps
    ]


def _ttl_after_finished(d: TrainJobDraft) -> None:
    """JobSet's `ttlSecondsAfterFinished` (the snapshot's template), the shared TTL rule: once
    that long has passed since the Complete/Failed condition, the finished pods are deleted, as
    JobSet's deletion of itself would take them (the TrainJob stays, as in Trainer); until then,
    a requeue at that exact time."""
    snapshot = next(
        (
            cm
            for cm in d.observed.extra
            if controlled_by(cm, d.job) and (cm.get("metadata") or {}).get("name") == ch.snapshot_name(d.name)
        ),
        None,
    )
    frozen, _ = ch.read_snapshot(snapshot) if snapshot is not None else (None, {})
    policy = run_policy_of(d.job, ch.jobset_spec(frozen or {}))
    expiry = runpolicy.ttl_expiry(policy, TRAINER.finished_at(d.status))
    if expiry is None:
        return
    if d.now >= expiry:
        d.delete([pod_name(p) for p in d.pods if not terminating(p)])
    else:
        d.plan.requeue_at = expiry


def _deadline_passed(d: TrainJobDraft, shape: JobShape) -> bool:
    """The shared deadline rule, counted from the creation or the last resume."""
    deadline = runpolicy.deadline(shape.run_policy, shape.status.run_began(d.status, d.job, d.now))
    if deadline is None:
        return False
    if d.now >= deadline:
        return True
    d.plan.requeue_at = deadline
    return False


def _run(
    d: TrainJobDraft,
    resolved: ResolvedTrainJob,
    shape: JobShape,
    state: Obj,
    gang: GangScheduler | bool | None = None,
) -> Obj:
    """Pods of a running TrainJob: failures, restarts, success, creates. Returns the new state."""
    restarts = int(state.get("restarts") or 0)
    failures: dict[str, int] = {k: int(v) for k, v in (state.get("failures") or {}).items()}
    counted = (
        {"countedRestarts": int(state.get("countedRestarts") or 0)} if "countedRestarts" in state else {}
    )
    if trainprogress.RESTARTED_AT in state:  # when this attempt began (stall detection)
        counted[trainprogress.RESTARTED_AT] = state[trainprogress.RESTARTED_AT]
    attempt = str(restarts)
    # pods of an earlier attempt go first
    d.delete(
        [
            pod_name(p)
            for p in d.live_pods()
            if (p["metadata"].get("labels") or {}).get(c.RESTART_ATTEMPT, "0") != attempt
        ]
    )
    # The slots of the current attempt (JobShape naming): success and dependencies count only them.
    current = [
        p for p in d.pods if (p["metadata"].get("labels") or {}).get(c.RESTART_ATTEMPT, "0") == attempt
    ]
    slots, _ = slot_pods(shape, current)
    every, _ = slot_pods(shape, d.pods)
    judged = groupfailure.judge(shape, every, d.deleting, failures)
    d.delete(judged.delete)
    failures, failed_steps = judged.failures, set(judged.failed)
    gang_policy = shape.failure.gang
    if judged.failed and gang_policy is not None:
        # restarts that count towards maxRestarts (a record without the field: every restart)
        so_far = int(state.get("countedRestarts", restarts) or 0)
        verdict = gang_policy.decide(judged.failed, so_far)
        d.status["jobsStatus"] = jobs_status(d, resolved, failed_steps)
        if verdict.restart:
            d.delete([pod_name(p) for p in d.live_pods()])
            d.event("Warning", verdict.reason, verdict.message)
            d.plan.restarts += 1
            new = {"restarts": restarts + 1, "countedRestarts": so_far + int(verdict.counts), "failures": {}}
            return trainprogress.restarted(new, d.now)
        d.terminal(FAILED, verdict.reason, verdict.message)
        return {**state, "restarts": restarts, "failures": failures}
    if shape.succeeded(phase_counts(shape, slots)):
        d.terminal(SUCCEEDED, c.REASON_ALL_JOBS_COMPLETED, MESSAGE_COMPLETED)
        d.status["jobsStatus"] = jobs_status(d, resolved, failed_steps)
        return {"restarts": restarts, **counted, "failures": failures}
    stalled = _stalled(d, resolved, shape, state, attempt)
    if stalled is not None:
        return stalled
    if gang is not False:
        _create_missing(
            d, resolved, shape, slots, every, restarts, gang if isinstance(gang, GangScheduler) else None
        )
    d.status["jobsStatus"] = jobs_status(d, resolved, failed_steps)
    return {"restarts": restarts, **counted, "failures": failures}


def _create_missing(
    d: TrainJobDraft,
    resolved: ResolvedTrainJob,
    shape: JobShape,
    slots: dict[tuple[str, int], Obj],
    held: Mapping[tuple[str, int], Obj],
    restarts: int,
    gang: GangScheduler | None = None,
) -> None:
    """The pods of the missing slots `creates.missing_slots` picks, built as JobSet's."""
    attempt = str(restarts)
    earlier_left = any(
        (p["metadata"].get("labels") or {}).get(c.RESTART_ATTEMPT, "0") != attempt for p in d.pods
    )
    room = max(1, d.config.max_pod_creates)
    steps = {s.name: s for s in resolved.steps}
    for group, index in creates.missing_slots(shape, slots, held, room, earlier_attempt_left=earlier_left):
        step = steps[group]
        j, i = divmod(index, max(step.pods, 1))
        new = ch.build_pod(resolved, d.job, step, j, i, restarts=restarts)
        trainprogress.inject_pod(d.job, d.config.progress, new)
        if gang is not None:
            decorate(new, gang, resolved.name, step.name)
        d.plan.create_pods.append(new)
