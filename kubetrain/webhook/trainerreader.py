"""What the webhook reads for a Trainer v2 review (kubetrain.webhook.trainer): the runtime a
TrainJob is checked against, or the TrainJobs naming a runtime being deleted (one LIST, in its
namespace for a TrainingRuntime, in every namespace for a ClusterTrainingRuntime).

The runtime of a TrainJob CREATE is the live one its runtimeRef names (one GET). That of an
UPDATE is the one it is built from: its runtime snapshot ConfigMap when it has one (one GET),
else the live runtime (a second GET) — as Trainer's `ValidateObjects` reads the snapshot first
since kubeflow/trainer#3960 (#3923). An UPDATE that leaves the spec as it was reads nothing:
it is admitted without a runtime (labels, annotations, finalizers).

Under a runtime with `podGroupPolicy.volcano` it then GETs each PriorityClass the pod templates
name (`gang.priority_classes_to_check`; one GET per distinct name, the system ones skipped), as
Trainer's volcano plugin `Validate` does on create and update: a 404 is a missing class; any
other failure (a 403 under an older chart without the RBAC, the API server unreachable) leaves
the class unread, which admits with a warning (`validate_trainer`) — the webhook never refuses
a TrainJob because it could not read. The first 403 is also logged, once per reader: the
operator's logs, not only the user's warning, say the chart's RBAC is missing."""

from __future__ import annotations

import logging
from typing import Any

from kubetrain.api.trainer import constants as c
from kubetrain.jobs.trainjob import gang
from kubetrain.jobs.trainjob.children import frozen_runtime, snapshot_name
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.validate import default_trainjob
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    CONFIG_MAPS,
    PRIORITY_CLASSES,
    TRAINING_RUNTIMES,
    TRAINJOBS,
)
from kubetrain.webhook.review import AdmissionRequest
from kubetrain.webhook.trainer import TrainerFacts, TrainerReader

log = logging.getLogger(__name__)


def _finished(job: dict[str, object]) -> bool:
    status = job.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return any(
        isinstance(x, dict) and x.get("type") in (c.COMPLETE, c.FAILED) and x.get("status") == "True"
        for x in conditions or []
    )


def kube_trainer_reader(client: KubeClient) -> TrainerReader:
    forbidden_logged = False

    async def priority_classes(request: AdmissionRequest, runtime: dict[str, Any]) -> TrainerFacts:
        nonlocal forbidden_logged
        facts = TrainerFacts(runtime=runtime)
        if not gang.checks_priority_classes(runtime):
            return facts  # most runtimes: no second `resolve` of the job beside validation's
        resolved, _ = resolve(default_trainjob(request.object or {}), runtime)
        for name in gang.priority_classes_to_check(resolved) if resolved is not None else []:
            try:
                await client.get(PRIORITY_CLASSES, None, name)
            except ApiError as exc:
                if exc.is_not_found:
                    facts.missing_priority_classes.append(name)
                else:
                    facts.unread_priority_classes[name] = (
                        f"{exc.status} {exc.reason}" if exc.status else f"no answer: {exc.reason}"
                    )
                    if exc.status == 403 and not forbidden_logged:
                        forbidden_logged = True
                        log.warning(
                            "the webhook may not get PriorityClasses (403 %s): TrainJobs under a Volcano "
                            "runtime are admitted without checking the PriorityClass their pods name; "
                            "grant get on priorityclasses.scheduling.k8s.io to the webhook's service "
                            "account (the chart's ClusterRole has it)",
                            exc.reason,
                        )
        return facts

    async def snapshot(request: AdmissionRequest) -> dict[str, object] | None:
        old = request.old_object or {}
        name = snapshot_name(str((old.get("metadata") or {}).get("name") or request.name))
        try:
            config_map = await client.get(CONFIG_MAPS, request.namespace, name)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise
        return frozen_runtime(config_map, old)

    async def read(request: AdmissionRequest) -> TrainerFacts:
        if request.kind == c.TRAINJOB:
            old = request.old_object if request.operation == "UPDATE" else None
            if old is not None:
                if old.get("spec") == (request.object or {}).get("spec"):
                    return TrainerFacts()
                frozen = await snapshot(request)
                if frozen is not None:
                    return await priority_classes(request, frozen)
            ref = ((request.object or {}).get("spec") or {}).get("runtimeRef") or {}
            name = ref.get("name")
            if not name:
                return TrainerFacts()
            kind = ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME
            try:
                if kind == c.TRAINING_RUNTIME:
                    runtime = await client.get(TRAINING_RUNTIMES, request.namespace, name)
                elif kind == c.CLUSTER_TRAINING_RUNTIME:
                    runtime = await client.get(CLUSTER_TRAINING_RUNTIMES, None, name)
                else:
                    return TrainerFacts()
            except ApiError as exc:
                if exc.is_not_found:
                    return TrainerFacts()
                raise
            return await priority_classes(request, runtime)
        namespace = request.namespace if request.kind == c.TRAINING_RUNTIME else None
        users: list[str] = []
        items, _ = await client.list_all(TRAINJOBS, namespace)
        for job in items:
            ref = (job.get("spec") or {}).get("runtimeRef") or {}
            if (
                ref.get("name") != request.name
                or (ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME) != request.kind
            ):
                continue
            if not _finished(job):
                meta = job.get("metadata") or {}
                users.append(f"{meta.get('namespace')}/{meta.get('name')}")
        return TrainerFacts(users=users)

    return read
