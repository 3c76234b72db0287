"""TrainJob: one training run of a runtime — which runtime, the trainer's image/command/env/node
count/resources, the initializers' storage URIs, patches to the runtime's template, suspend,
managedBy and a deadline; status with Trainer's conditions (`Suspended`, `Complete`, `Failed`)
and one `jobsStatus` entry per step. Trainer 2.3's field names. Pure."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kubetrain.api.common import KubeModel

ConditionStatus = Literal["True", "False", "Unknown"]


class RuntimeRef(KubeModel):
    name: str | None = None
    api_group: str | None = None
    kind: str | None = None


class LocalObjectReference(KubeModel):
    name: str | None = None


class DatasetInitializer(KubeModel):
    storage_uri: str | None = None
    env: list[dict[str, Any]] | None = None
    secret_ref: LocalObjectReference | None = None


class ModelInitializer(KubeModel):
    storage_uri: str | None = None
    env: list[dict[str, Any]] | None = None
    secret_ref: LocalObjectReference | None = None


class Initializer(KubeModel):
    dataset: DatasetInitializer | None = None
    model: ModelInitializer | None = None


class Trainer(KubeModel):
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[dict[str, Any]] | None = None
    num_nodes: int | None = None
    # A core/v1 ResourceRequirements (limits, requests, claims).
    resources_per_node: dict[str, Any] | None = None
    num_proc_per_node: int | None = None


class ContainerPatch(KubeModel):
    name: str | None = None
    env: list[dict[str, Any]] | None = None
    volume_mounts: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None


class PodSpecPatch(KubeModel):
    service_account_name: str | None = None
    volumes: list[dict[str, Any]] | None = None
    init_containers: list[ContainerPatch] | None = None
    containers: list[ContainerPatch] | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    security_context: dict[str, Any] | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    termination_grace_period_seconds: int | None = None


class PodTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = None
    spec: PodSpecPatch | None = None


class JobSpecPatch(KubeModel):
    template: PodTemplatePatch | None = None


class JobTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = None
    spec: JobSpecPatch | None = None


class ReplicatedJobPatch(KubeModel):
    name: str | None = None
    template: JobTemplatePatch | None = None


class JobSetSpecPatch(KubeModel):
    replicated_jobs: list[ReplicatedJobPatch] | None = None


class JobSetTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = None
    spec: JobSetSpecPatch | None = None


class TrainingRuntimeSpecPatch(KubeModel):
    template: JobSetTemplatePatch | None = None


class RuntimePatch(KubeModel):
    manager: str | None = None
    time: str | None = None
    training_runtime_spec: TrainingRuntimeSpecPatch | None = None


class TrainJobSpec(KubeModel):
    runtime_ref: RuntimeRef | None = None
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    runtime_patches: list[RuntimePatch] | None = None
    suspend: bool | None = None
    active_deadline_seconds: int | None = None
    managed_by: str | None = None


class Condition(KubeModel):
    """A metav1.Condition."""

    type: str
    status: ConditionStatus
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


class JobStatus(KubeModel):
    """One step (replicated job) of the TrainJob, as JobSet reports it."""

    name: str | None = None
    ready: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    active: int | None = None
    suspended: int | None = None


class Metric(KubeModel):
    name: str | None = None
    value: str | None = None


class TrainerStatus(KubeModel):
    progress_percentage: int | None = None
    estimated_remaining_seconds: int | None = None
    metrics: list[Metric] | None = None
    last_updated_time: str | None = None


class TrainJobStatus(KubeModel):
    conditions: list[Condition] | None = None
    jobs_status: list[JobStatus] | None = None
    trainer_status: TrainerStatus | None = None


class TrainJob(KubeModel):
    api_version: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: TrainJobSpec | None = None
    status: TrainJobStatus | None = None
