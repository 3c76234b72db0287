"""TrainJob: one training run of a runtime — which runtime, the trainer's image/command/env/node
count/resources, the initializers' storage URIs, patches to the runtime's template, suspend,
managedBy and a deadline; status with Trainer's conditions (`Suspended`, `Complete`, `Failed`)
and one `jobsStatus` entry per step. Trainer 2.3's field names. Pure."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kubetrain.api.common import KubeModel

ConditionStatus = Literal["True", "False", "Unknown"]


PATCH_METADATA = "Labels and annotations to add; no other metadata may be patched."


class RuntimeRef(KubeModel):
    name: str | None = Field(
        None,
        description="Name of the runtime; a TrainingRuntime must be in the TrainJob's namespace.",
    )
    api_group: str | None = Field(
        None, description="The runtime's API group; defaults to trainer.kubeflow.org."
    )
    kind: str | None = Field(None, description="ClusterTrainingRuntime (the default) or TrainingRuntime.")


class LocalObjectReference(KubeModel):
    name: str | None = Field(None, description="Name of the object, in the TrainJob's namespace.")


class DatasetInitializer(KubeModel):
    storage_uri: str | None = Field(
        None, description="Where the dataset comes from, a URI such as hf://org/dataset or s3://bucket/path."
    )
    env: list[dict[str, Any]] | None = Field(
        None,
        description="Environment variables (core/v1 EnvVars) for the dataset initializer "
        "container, merged over the runtime's.",
    )
    secret_ref: LocalObjectReference | None = Field(
        None, description="A Secret in the TrainJob's namespace with the credentials to download the dataset."
    )


class ModelInitializer(KubeModel):
    storage_uri: str | None = Field(
        None,
        description="Where the pre-trained model comes from, a URI such as hf://org/model or s3://bucket/path.",
    )
    env: list[dict[str, Any]] | None = Field(
        None,
        description="Environment variables (core/v1 EnvVars) for the model initializer "
        "container, merged over the runtime's.",
    )
    secret_ref: LocalObjectReference | None = Field(
        None, description="A Secret in the TrainJob's namespace with the credentials to download the model."
    )


class Initializer(KubeModel):
    dataset: DatasetInitializer | None = Field(
        None, description="Downloads the dataset before training (the dataset-initializer step)."
    )
    model: ModelInitializer | None = Field(
        None, description="Downloads the pre-trained model before training (the model-initializer step)."
    )


class Trainer(KubeModel):
    image: str | None = Field(None, description="The training container's image; unset: the runtime's.")
    command: list[str] | None = Field(
        None, description="The training container's entrypoint; unset: the runtime's."
    )
    args: list[str] | None = Field(None, description="Arguments to the entrypoint; unset: the runtime's.")
    env: list[dict[str, Any]] | None = Field(
        None,
        description="Environment variables (core/v1 EnvVars) for the training container, merged "
        "over the runtime's.",
    )
    num_nodes: int | None = Field(
        None,
        description="How many training nodes (pods) to run, at least 0; unset: the runtime's "
        "mlPolicy.numNodes.",
    )
    # A core/v1 ResourceRequirements (limits, requests, claims).
    resources_per_node: dict[str, Any] | None = Field(
        None,
        description="Compute resources of each training node's container, a core/v1 "
        "ResourceRequirements (limits, requests).",
    )
    num_proc_per_node: int | None = Field(
        None,
        description="Processes on each node (torchrun's nproc-per-node, MPI's slots), at least 1; "
        "unset: the runtime's.",
    )


class ContainerPatch(KubeModel):
    name: str | None = Field(None, description="The container to patch; the runtime's template must have it.")
    env: list[dict[str, Any]] | None = Field(
        None,
        description="Environment variables (core/v1 EnvVars) merged into the container's; not for "
        "the node and initializer containers (use trainer and initializer).",
    )
    volume_mounts: list[dict[str, Any]] | None = Field(
        None, description="core/v1 VolumeMounts to add to the container."
    )
    security_context: dict[str, Any] | None = Field(
        None, description="The container's core/v1 SecurityContext."
    )


class PodSpecPatch(KubeModel):
    service_account_name: str | None = Field(None, description="The ServiceAccount the pods run as.")
    volumes: list[dict[str, Any]] | None = Field(None, description="core/v1 Volumes to add to the pods.")
    init_containers: list[ContainerPatch] | None = Field(
        None, description="Patches to the pods' init containers, by name."
    )
    containers: list[ContainerPatch] | None = Field(
        None, description="Patches to the pods' containers, by name."
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        None, description="Secrets used to pull the pods' images."
    )
    security_context: dict[str, Any] | None = Field(None, description="The pods' core/v1 PodSecurityContext.")
    node_selector: dict[str, str] | None = Field(None, description="Node labels the pods must be placed on.")
    affinity: dict[str, Any] | None = Field(None, description="The pods' core/v1 Affinity.")
    tolerations: list[dict[str, Any]] | None = Field(
        None, description="core/v1 Tolerations to add to the pods."
    )
    scheduling_gates: list[dict[str, Any]] | None = Field(
        None,
        description="Scheduling gates the pods are created with; they stay Pending until each is removed.",
    )
    termination_grace_period_seconds: int | None = Field(
        None, description="Seconds the pods get to stop after being asked to."
    )


class PodTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = Field(None, description=PATCH_METADATA)
    spec: PodSpecPatch | None = Field(None, description="The pod spec fields that may be patched.")


class JobSpecPatch(KubeModel):
    template: PodTemplatePatch | None = Field(None, description="Patch of the Job's pod template.")


class JobTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = Field(None, description=PATCH_METADATA)
    spec: JobSpecPatch | None = Field(None, description="Patch of the Job's spec.")


class ReplicatedJobPatch(KubeModel):
    name: str | None = Field(None, description="The runtime's replicated job (step) to patch, e.g. node.")
    template: JobTemplatePatch | None = Field(
        None, description="Patch of that replicated job's Job template."
    )


class JobSetSpecPatch(KubeModel):
    replicated_jobs: list[ReplicatedJobPatch] | None = Field(
        None, description="Patches per replicated job, by name."
    )


class JobSetTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = Field(None, description=PATCH_METADATA)
    spec: JobSetSpecPatch | None = Field(None, description="Patch of the JobSet spec.")


class TrainingRuntimeSpecPatch(KubeModel):
    template: JobSetTemplatePatch | None = Field(None, description="Patch of the runtime's JobSet template.")


class RuntimePatch(KubeModel):
    manager: str | None = Field(
        None,
        description="Who owns this patch (a user, a controller such as Kueue); unique in the list.",
    )
    time: str | None = Field(None, description="When the patch was last written; for information only.")
    training_runtime_spec: TrainingRuntimeSpecPatch | None = Field(
        None, description="The patch: the runtime's fields it changes for this TrainJob only."
    )


class TrainJobSpec(KubeModel):
    runtime_ref: RuntimeRef | None = Field(
        None, description="The TrainingRuntime or ClusterTrainingRuntime the TrainJob runs."
    )
    initializer: Initializer | None = Field(
        None, description="Dataset and model downloads that run before training."
    )
    trainer: Trainer | None = Field(
        None,
        description="Overrides of the runtime's training step: image, command, environment, "
        "node count, resources.",
    )
    runtime_patches: list[RuntimePatch] | None = Field(
        None, description="Changes to the runtime's template for this TrainJob, at most 16, keyed by manager."
    )
    suspend: bool | None = Field(
        None, description="true deletes the TrainJob's pods and keeps it Suspended; false resumes it."
    )
    active_deadline_seconds: int | None = Field(
        None,
        description="Seconds the TrainJob may run from its start (reset on resume); then it fails "
        "with DeadlineExceeded and its pods are stopped.",
    )
    managed_by: str | None = Field(
        None,
        description="The controller that runs the TrainJob: unset or "
        "trainer.kubeflow.org/trainjob-controller is kubetrain; kueue.x-k8s.io/multikueue leaves it "
        "to Kueue. Immutable.",
    )


class Condition(KubeModel):
    """A metav1.Condition."""

    type: str = Field(description="Suspended, Complete or Failed.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str | None = Field(None, description="A CamelCase word saying why the condition changed.")
    message: str | None = Field(None, description="A human-readable account of the change.")
    last_transition_time: str | None = Field(None, description="When the status last changed.")
    observed_generation: int | None = Field(
        None, description="The TrainJob generation the condition was set for."
    )


class JobStatus(KubeModel):
    """One step (replicated job) of the TrainJob, as JobSet reports it."""

    name: str | None = Field(None, description="The step (replicated job), e.g. node or dataset-initializer.")
    ready: int | None = Field(None, description="The step's Jobs whose pods are all ready or done.")
    succeeded: int | None = Field(None, description="The step's Jobs that succeeded.")
    failed: int | None = Field(None, description="The step's Jobs that failed.")
    active: int | None = Field(None, description="The step's Jobs with a running or pending pod.")
    suspended: int | None = Field(None, description="The step's Jobs that are suspended.")


class Metric(KubeModel):
    name: str | None = Field(None, description="The metric's name, e.g. loss.")
    value: str | None = Field(None, description="Its latest value, as text.")


class TrainerStatus(KubeModel):
    progress_percentage: int | None = Field(
        None, description="How far training is, 0-100, as the code last reported."
    )
    estimated_remaining_seconds: int | None = Field(
        None, description="Seconds the training code estimates it still needs."
    )
    metrics: list[Metric] | None = Field(None, description="Training metrics the code last reported.")
    last_updated_time: str | None = Field(None, description="When the report arrived.")


class TrainJobStatus(KubeModel):
    conditions: list[Condition] | None = Field(
        None, description="Suspended, Complete and Failed: which holds says the TrainJob's state."
    )
    jobs_status: list[JobStatus] | None = Field(None, description="Job counts per step (replicated job).")
    trainer_status: TrainerStatus | None = Field(
        None, description="The progress the training code last reported from inside its pods."
    )


class TrainJob(KubeModel):
    api_version: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: TrainJobSpec | None = Field(
        None, description="The run: which runtime, and what this TrainJob changes of it."
    )
    status: TrainJobStatus | None = Field(
        None, description="The TrainJob's observed state, written by the operator."
    )
