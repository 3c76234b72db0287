"""Types shared by every job kind: replica specs, run policy, scheduling, status.

Field names are those of Kubeflow's `kubeflow.org/v1` API (camelCase on the wire, snake_case in
Python), so a Kubeflow manifest is accepted after changing only `apiVersion`.
Pod templates stay plain dicts: they are Kubernetes PodTemplateSpecs, validated against the
upstream schema by `kubetrain.jobs.validation`, and unknown fields in them are preserved.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

from kubetrain.api.trainerstatus import TrainerStatus

RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
CleanPodPolicy = Literal["All", "Running", "None"]
DEFAULT_CLEAN_POD_POLICY: CleanPodPolicy = "Running"
# Stalled: a Running job stopped reporting progress (kubetrain's; operator/stall.py)
# PodsNotStarting: containers of its pods wait for a reason that does not pass (operator/podstart.py)
ConditionType = Literal[
    "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended", "Stalled", "PodsNotStarting"
]
ConditionStatus = Literal["True", "False", "Unknown"]
# A Kubernetes resource quantity: "4", "500m", "16Gi", or a bare number.
Quantity = int | float | str
# The `format`s Kubeflow's CRDs declare (controller-gen from *int32 / *int64 / metav1.Time): a
# real API server refuses an integer outside the format's range (kube-openapi's
# `numberValidator`), and clients (kubectl explain, generated clients) see the type.
Int32 = Annotated[int, WithJsonSchema({"type": "integer", "format": "int32"})]
Int64 = Annotated[int, WithJsonSchema({"type": "integer", "format": "int64"})]
Time = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]

RESTART_POLICIES: tuple[str, ...] = ("Always", "OnFailure", "Never", "ExitCode")
CLEAN_POD_POLICIES: tuple[str, ...] = ("All", "Running", "None")


class KubeModel(BaseModel):
    """Base for every API object: camelCase aliases, unknown fields rejected, None omitted."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=False,
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, unset (None) fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class ReplicaSpec(KubeModel):
    """How many pods of one replica type to run, from which template, and how to restart them."""

    replicas: Int32 | None = None
    template: dict[str, Any] = Field(default_factory=dict)
    restart_policy: RestartPolicy | None = None


class SchedulingPolicy(KubeModel):
    """Gang-scheduling parameters passed to the PodGroup."""

    min_available: Int32 | None = None
    queue: str | None = None
    min_resources: dict[str, Quantity] | None = None
    priority_class: str | None = None
    schedule_timeout_seconds: Int32 | None = None


PodFailurePolicyAction = Literal["FailJob", "Ignore", "Count", "RestartJob"]
PodFailurePolicyOperator = Literal["In", "NotIn"]
POD_FAILURE_POLICY_ACTIONS: tuple[str, ...] = ("FailJob", "Ignore", "Count", "RestartJob")


class PodFailurePolicyOnExitCodes(KubeModel):
    """Matches a failed pod by the exit codes of its containers (batch/v1 field names)."""

    container_name: str | None = None
    operator: PodFailurePolicyOperator | None = None
    values: list[int] | None = None


class PodFailurePolicyOnPodCondition(KubeModel):
    """Matches a failed pod by one of its conditions, e.g. `DisruptionTarget` (status defaults to True)."""

    type: str | None = None
    status: ConditionStatus | None = None


class PodFailurePolicyRule(KubeModel):
    """One rule: an action, and a pattern of exactly one of `onExitCodes` or `onPodConditions`;
    `replicaTypes` (kubetrain's addition) limits it to pods of those replica types."""

    action: PodFailurePolicyAction | None = None
    on_exit_codes: PodFailurePolicyOnExitCodes | None = None
    on_pod_conditions: list[PodFailurePolicyOnPodCondition] | None = None
    replica_types: list[str] | None = None


class PodFailurePolicy(KubeModel):
    """What a failed pod means, as batch/v1 Job's `podFailurePolicy`: the first matching rule wins."""

    rules: list[PodFailurePolicyRule] | None = None


class RunPolicy(KubeModel):
    """Job-level run-time policy shared by every kind."""

    clean_pod_policy: CleanPodPolicy | None = None
    ttl_seconds_after_finished: Int32 | None = None
    active_deadline_seconds: Int64 | None = None
    backoff_limit: Int32 | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    scheduling_policy: SchedulingPolicy | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    # Seconds a Running job that reported progress may go without a report (operator/stall.py);
    # kubetrain.io only (the kubeflow.org CRDs leave it out: there, the annotation
    # kubetrain.io/progress-deadline-seconds).
    progress_deadline_seconds: int | None = Field(default=None, ge=1)
    # Seconds a scheduled pod may wait to start for a reason that does not pass (a wrong image, a
    # missing ConfigMap) before the job fails (operator/podstart.py); kubetrain.io only, as above
    # (elsewhere the annotation kubetrain.io/start-deadline-seconds).
    start_deadline_seconds: int | None = Field(default=None, ge=1)


class JobCondition(KubeModel):
    type: ConditionType
    status: ConditionStatus
    reason: str | None = None
    message: str | None = None
    last_update_time: Time | None = None
    last_transition_time: Time | None = None


class LabelSelector(KubeModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[dict[str, Any]] | None = None


class ReplicaStatus(KubeModel):
    """Pod counts of one replica type; `restarts` is persisted so an operator restart keeps it,
    `priorRestarts` is the part of it the present pods' container restart counts do not explain
    (the operator's own record: restart counts never come from pod metadata)."""

    active: Int32 | None = None
    pending: int | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    restarts: int | None = None
    prior_restarts: int | None = None
    selector: str | None = None
    label_selector: LabelSelector | None = None


class CodeSyncStatus(KubeModel):
    """The code a job runs (KubeDL's `kubedl.io/git-sync-config`, kubetrain.jobs.codesync): the
    commit the first successful fetch resolved, which every later pod of the job is pinned to."""

    repository: str | None = None
    revision: str | None = None  # what the annotation asks for: a branch, tag or commit
    commit: str | None = None  # the resolved commit SHA
    pod: str | None = None  # the pod whose fetch resolved it


class TensorBoardStatus(KubeModel):
    """The job's TensorBoard (KubeDL's `kubedl.io/tensorboard-config`, kubetrain.jobs.tensorboard)."""

    address: str | None = None  # http://<service>.<namespace>.svc:6006/
    url: str | None = None  # through the Ingress, when one is asked for
    phase: str | None = None  # the pod's phase
    expire_time: str | None = None  # when it is deleted (the job finished + its TTL)
    config_hash: str | None = None  # of the annotation the objects were last built from
    ingress: str | None = None  # the Ingress kubetrain created for it
    error: str | None = None  # why the annotation, edited since, is not applied (it names the field)


class JobStatus(KubeModel):
    """Observed state. `replicas` (desired pods, all types) and `active` (running pods, all types)
    are totals kept for the `Replicas`/`Active` printer columns (a JSONPath cannot sum a map)."""

    conditions: list[JobCondition] | None = None
    replica_statuses: dict[str, ReplicaStatus] | None = None
    start_time: Time | None = None
    completion_time: Time | None = None
    last_reconcile_time: Time | None = None
    observed_generation: int | None = None
    replicas: int | None = None
    active: int | None = None
    # Whole-job restarts (a RestartJob rule): also the attempt that pods labelled
    # `kubetrain.io/attempt` belong to (pods without the label are attempt 0).
    job_restarts: int | None = None
    code_sync: CodeSyncStatus | None = None
    tensor_board: TensorBoardStatus | None = None
    # What the training code last reported (kubetrain.api.trainerstatus; written by the status
    # endpoint only, carried over by every reconcile).
    trainer_status: TrainerStatus | None = None


class ObjectMetaFields(KubeModel):
    """Only what kubetrain reads from metadata; the full metadata dict is kept verbatim."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class JobSpecBase(KubeModel):
    run_policy: RunPolicy | None = None

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        """The kind's replica map (`tfReplicaSpecs`, …); overridden per kind."""
        raise NotImplementedError


class JobBase(KubeModel):
    """Fields common to every job kind. `metadata` is the object's metadata, kept as a dict."""

    api_version: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    status: JobStatus | None = None
