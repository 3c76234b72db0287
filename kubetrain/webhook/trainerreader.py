"""What the webhook reads for a Trainer v2 review (kubetrain.webhook.trainer): the runtime a
TrainJob is checked against, or the TrainJobs naming a runtime being deleted (one LIST, in its
namespace for a TrainingRuntime, in every namespace for a ClusterTrainingRuntime).

The runtime of a TrainJob CREATE is the live one its runtimeRef names (one GET). That of an
UPDATE is the one it is built from: its runtime snapshot ConfigMap when it has one (one GET),
else the live runtime (a second GET) — as Trainer's `ValidateObjects` reads the snapshot first
since kubeflow/trainer#3960 (#3923). An UPDATE that leaves the spec as it was reads nothing:
it is admitted without a runtime (labels, annotations, finalizers)."""

from __future__ import annotations

from kubetrain.api.trainer import constants as c
from kubetrain.jobs.trainjob.children import frozen_runtime, snapshot_name
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS
from kubetrain.webhook.review import AdmissionRequest
from kubetrain.webhook.trainer import TrainerFacts, TrainerReader


def _finished(job: dict[str, object]) -> bool:
    status = job.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return any(
        isinstance(x, dict) and x.get("type") in (c.COMPLETE, c.FAILED) and x.get("status") == "True"
        for x in conditions or []
    )


def kube_trainer_reader(client: KubeClient) -> TrainerReader:
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
                    return TrainerFacts(runtime=frozen)
            ref = ((request.object or {}).get("spec") or {}).get("runtimeRef") or {}
            name = ref.get("name")
            if not name:
                return TrainerFacts()
            kind = ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME
            try:
                if kind == c.TRAINING_RUNTIME:
                    return TrainerFacts(runtime=await client.get(TRAINING_RUNTIMES, request.namespace, name))
                if kind == c.CLUSTER_TRAINING_RUNTIME:
                    return TrainerFacts(runtime=await client.get(CLUSTER_TRAINING_RUNTIMES, None, name))
            except ApiError as exc:
                if exc.is_not_found:
                    return TrainerFacts()
                raise
            return TrainerFacts()
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
