"""The job shape of a Trainer TrainJob: the third producer of `kubetrain.jobs.shape.JobShape`
(beside `jobs/v1shape.py`'s `<kind>ReplicaSpecs` kinds and MPIJob v2beta1).

A TrainJob resolved against its runtime snapshot (`resolve.py`) is one group per replicated
job, in the runtime's order: `replicas` jobs of `pods` indexed pods each are the group's
`replicas * pods` slots, slot `k` being pod `<tj>-<rjob>-<k // pods>-<k % pods>` (JobSet's
`<jobset>-<rjob>-<jobIndex>-<completionIndex>`: `JobShape.naming`). `dependsOn` becomes
`depends_on` with JobSet's meaning of Ready (a job whose pods Succeeded counts as Ready); the
success policy (All / Any of the target replicated jobs, a job done when all its pods
Succeeded) is the shape's rules; each replicated job's Job `backoffLimit`,
`podFailurePolicy` (`podfailurepolicy.py`) and `activeDeadlineSeconds` and the template's
`failurePolicy` (`failurepolicy.py`) its failure model, and its PodGroup counts the steps one
gang can start together (`gang.gang_steps`: not the initializers a step waits to Complete, nor
a step made once others are Ready); the TrainJob's `suspend`, `activeDeadlineSeconds` and
`managedBy` and the template's `ttlSecondsAfterFinished` are its run policy; the ML policy's env
and port are its env plug-in (`mlenv.py`).

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from kubetrain.api.errors import json_int
from kubetrain.api.gangschedulers import NONE
from kubetrain.api.podtemplate import framework_container_index
from kubetrain.api.startdeadline import start_deadline_seconds
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainerstatus import TRAINJOB_CA_CONFIG_MAP_SUFFIX, progress_deadline_seconds
from kubetrain.frameworks.env import JobLayout, ReplicaCounts, ReplicaLayout
from kubetrain.jobs.failuremodel import FailureModel
from kubetrain.jobs.projection import StatusProjection
from kubetrain.jobs.shape import (
    DependsOn,
    JobShape,
    ReplicaGroup,
    RunPolicy,
    RunRecording,
)
from kubetrain.jobs.trainjob.children import JobSetChildren
from kubetrain.jobs.trainjob.failurepolicy import JobSetFailurePolicy
from kubetrain.jobs.trainjob.gang import gang_of, gang_steps, scheduling_of
from kubetrain.jobs.trainjob.model import ResolvedTrainJob

# The trainer container Trainer's runtimes name; other steps' first container otherwise.
NODE_CONTAINER = c.NODE


@dataclass(frozen=True, slots=True)
class JobSetNaming:
    """JobSet's pod names: `<tj>-<rjob>-<jobIndex>-<completionIndex>`."""

    name: str
    pods: Mapping[str, int]  # pods per job of each replicated job

    def pod_name(self, group: str, index: int) -> str:
        per_job = max(self.pods.get(group, 1), 1)
        return f"{self.name}-{group}-{index // per_job}-{index % per_job}"


@dataclass(frozen=True, slots=True)
class SuccessPolicy:
    """JobSet's successPolicy over the replicated jobs' jobs; a TrainJob fails only through its
    failure policy (decided by the planner from the jobs' backoff limits), never by a rule here."""

    operator: str  # All | Any
    targets: tuple[str, ...]  # empty: every replicated job
    pods: Mapping[str, int]

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        done: list[bool] = []
        for group, layout in job.replicas.items():
            if self.targets and group not in self.targets:
                continue
            per_job = max(self.pods.get(group, 1), 1)
            indices = counts[group].succeeded_indices if group in counts else frozenset()
            for j in range(layout.replicas // per_job):
                done.append(all(j * per_job + i in indices for i in range(per_job)))
        if not done:
            return False
        return any(done) if self.operator == "Any" else all(done)

    def failed(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> str | None:
        return None


def run_policy_of(trainjob: Mapping[str, Any], jobset_spec: Mapping[str, Any]) -> RunPolicy:
    spec = trainjob.get("spec") or {}
    deadline = json_int(spec.get("activeDeadlineSeconds"))
    ttl = json_int(jobset_spec.get("ttlSecondsAfterFinished"))
    manager = spec.get("managedBy")
    annotations = (trainjob.get("metadata") or {}).get("annotations") or {}
    return RunPolicy(
        clean_pod_policy="Running",  # Complete/Failed delete the pods still running or pending
        suspend=spec.get("suspend") is True,
        active_deadline_seconds=deadline if deadline is not None and deadline > 0 else None,
        ttl_seconds_after_finished=ttl if ttl is not None and ttl >= 0 else None,
        managed_by=manager if isinstance(manager, str) and manager else None,
        ttl_deletes_job=False,  # the TTL deletes the pods; the TrainJob stays, as in Trainer
        finished_keeps_children=True,  # JobSet keeps its Service; the PodGroup still goes (plan.py)
        # The annotation kubetrain.io/progress-deadline-seconds (Trainer's schema has no field).
        progress_deadline_seconds=progress_deadline_seconds({}, annotations),
        start_deadline_seconds=start_deadline_seconds(annotations),  # kubetrain.io/start-deadline-seconds
    )


def trainjob_shape(
    trainjob: Mapping[str, Any],
    resolved: ResolvedTrainJob,
    jobset_spec: Mapping[str, Any],
    status: StatusProjection,
    gang_scheduler: str = NONE,
) -> JobShape:
    """The shape of `trainjob` resolved as `resolved` from a runtime whose JobSet template spec
    is `jobset_spec`, with the `status` projection of Trainer's status the planner gives it, for
    an operator running with `gang_scheduler` (its --gang-scheduler)."""
    pods = MappingProxyType({s.name: s.pods for s in resolved.steps})
    groups: dict[str, ReplicaGroup] = {}
    replicas: dict[str, ReplicaLayout] = {}
    for step in resolved.steps:
        template = step.pod_template
        policy = str((template.get("spec") or {}).get("restartPolicy") or "OnFailure")
        container = framework_container_index(template, NODE_CONTAINER) or 0
        replicas[step.name] = ReplicaLayout(
            step.name, step.replicas * step.pods, template, policy, 0, container
        )
        groups[step.name] = ReplicaGroup.of(
            replicas[step.name],
            tuple(DependsOn(n, s, succeeded_is_ready=True) for n, s in step.depends_on),
            f"runtime.spec.template.spec.replicatedJobs[{step.name}]",
        )
        groups[step.name] = replace(groups[step.name], job_size=max(step.pods, 1))
    layout = JobLayout(
        kind=c.TRAINJOB,
        api_version=c.API_VERSION,
        name=resolved.name,
        namespace=resolved.namespace,
        uid=resolved.uid,
        spec=MappingProxyType(dict(trainjob.get("spec") or {})),
        replicas=MappingProxyType(replicas),
        # Its annotations (the progress opt-out, kubetrain.io/progress-reporting).
        annotations=MappingProxyType(dict((trainjob.get("metadata") or {}).get("annotations") or {})),
        resource=c.PLURALS[c.TRAINJOB],
        progress_ca_config_map=f"{resolved.name}{TRAINJOB_CA_CONFIG_MAP_SUFFIX}",
    )
    return JobShape(
        kind=c.TRAINJOB,
        api_version=c.API_VERSION,
        name=resolved.name,
        namespace=resolved.namespace,
        uid=resolved.uid,
        groups=MappingProxyType(groups),
        run_policy=replace(
            run_policy_of(trainjob, jobset_spec),
            scheduling=scheduling_of(resolved),
            in_order_startup=resolved.in_order,
            blocking_recreate=resolved.blocking_recreate,
        ),
        rules=SuccessPolicy(resolved.success_operator, resolved.success_targets, pods),
        plugin=resolved.env,
        layout=layout,
        status=status,
        naming=JobSetNaming(resolved.name, pods),
        failure=FailureModel(
            MappingProxyType({s.name: s.backoff_limit for s in resolved.steps}),
            JobSetFailurePolicy(resolved.name, resolved.failure_policy),
            MappingProxyType({s.name: s.pod_failure_rules for s in resolved.steps if s.pod_failure_rules}),
            MappingProxyType(
                {
                    s.name: s.active_deadline_seconds
                    for s in resolved.steps
                    if s.active_deadline_seconds is not None
                }
            ),
            MappingProxyType(
                {
                    s.name: s.backoff_limit_per_index
                    for s in resolved.steps
                    if s.backoff_limit_per_index is not None
                }
            ),
            MappingProxyType(
                {
                    s.name: s.max_failed_indexes
                    for s in resolved.steps
                    if s.max_failed_indexes is not None and s.backoff_limit_per_index is not None
                }
            ),
            MappingProxyType({s.name: s.success_rules for s in resolved.steps if s.success_rules}),
        ),
        gang_groups=gang_steps(resolved).counted,
        children=JobSetChildren(resolved, trainjob),
        gang=gang_of(resolved, gang_scheduler),
        # The run's record (whole-gang restarts, failures per job of each replicated job) lives
        # in the runtime snapshot ConfigMap; pods carry JobSet's restart attempt (and their
        # Job's, under a runtime with a RestartJob rule).
        recording=RunRecording(
            in_status=False, attempt_label=c.RESTART_ATTEMPT, job_attempt_label=c.JOB_RESTART_ATTEMPT
        ),
        tensorboard=False,  # Trainer's status has no place for KubeDL's TensorBoard
    )
