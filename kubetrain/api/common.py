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

    replicas: Int32 | None = Field(
        None, description="Number of pods of this replica type. Defaults to 1 (an MPIJob's Worker: 0)."
    )
    template: dict[str, Any] = Field(
        default_factory=dict,
        description="The pods' template, a core/v1 PodTemplateSpec: metadata and a pod spec "
        "(`kubectl explain pod.spec` lists its fields). Checked by kubetrain's webhook, not field by "
        "field in this schema.",
    )
    restart_policy: RestartPolicy | None = Field(
        None,
        description="What a failure of this type's pods does: Never fails the job; OnFailure and "
        "Always restart containers in place; ExitCode fails the job on exit codes 1-127 and "
        "recreates the pod on 128 and above. Defaults per kind.",
    )


class SchedulingPolicy(KubeModel):
    """Gang-scheduling parameters passed to the PodGroup."""

    min_available: Int32 | None = Field(
        None,
        description="Pods that must be placeable together before any of them starts (the "
        "PodGroup's minMember). Defaults to the job's total replicas when the operator runs with "
        "gang scheduling.",
    )
    queue: str | None = Field(
        None, description="The gang scheduler's queue the PodGroup joins (Volcano's queue)."
    )
    min_resources: dict[str, Quantity] | None = Field(
        None,
        description="Resources (name to quantity, e.g. cpu: 8, nvidia.com/gpu: 4) the scheduler "
        "must find free before it admits the PodGroup.",
    )
    priority_class: str | None = Field(None, description="Name of a PriorityClass given to the PodGroup.")
    schedule_timeout_seconds: Int32 | None = Field(
        None,
        description="Seconds the scheduler tries to place the whole gang before it gives up on "
        "this attempt (scheduler-plugins coscheduling).",
    )


PodFailurePolicyAction = Literal["FailJob", "Ignore", "Count", "RestartJob"]
PodFailurePolicyOperator = Literal["In", "NotIn"]
POD_FAILURE_POLICY_ACTIONS: tuple[str, ...] = ("FailJob", "Ignore", "Count", "RestartJob")


class PodFailurePolicyOnExitCodes(KubeModel):
    """Matches a failed pod by the exit codes of its containers (batch/v1 field names)."""

    container_name: str | None = Field(
        None, description="Only this container's exit code is matched; unset: any container's."
    )
    operator: PodFailurePolicyOperator | None = Field(
        None, description="In: the exit code is one of `values`; NotIn: it is none of them."
    )
    values: list[int] | None = Field(
        None, description="The exit codes, distinct and in ascending order; 0 is not allowed with In."
    )


class PodFailurePolicyOnPodCondition(KubeModel):
    """Matches a failed pod by one of its conditions, e.g. `DisruptionTarget` (status defaults to True)."""

    type: str | None = Field(None, description="The pod condition type to match, e.g. DisruptionTarget.")
    status: ConditionStatus | None = Field(
        None, description="The condition's status to match: True (the default), False or Unknown."
    )


class PodFailurePolicyRule(KubeModel):
    """One rule: an action, and a pattern of exactly one of `onExitCodes` or `onPodConditions`;
    `replicaTypes` (kubetrain's addition) limits it to pods of those replica types."""

    action: PodFailurePolicyAction | None = Field(
        None,
        description="What a matching failed pod does: FailJob fails the job, Ignore recreates the "
        "pod without counting it, Count counts it against backoffLimit and recreates it, "
        "RestartJob deletes all the job's pods and starts them again.",
    )
    on_exit_codes: PodFailurePolicyOnExitCodes | None = Field(
        None, description="Matches the failed pod by its containers' exit codes."
    )
    on_pod_conditions: list[PodFailurePolicyOnPodCondition] | None = Field(
        None, description="Matches the failed pod when it has any of these conditions."
    )
    replica_types: list[str] | None = Field(
        None,
        description="Limits the rule to pods of these replica types (e.g. Worker); unset: every "
        "type. kubetrain's addition to batch/v1's rule.",
    )


class PodFailurePolicy(KubeModel):
    """What a failed pod means, as batch/v1 Job's `podFailurePolicy`: the first matching rule wins."""

    rules: list[PodFailurePolicyRule] | None = Field(
        None,
        description="Checked in order against each failed pod; the first that matches decides. A "
        "failure no rule matches is handled by the replica's restartPolicy.",
    )


class RunPolicy(KubeModel):
    """Job-level run-time policy shared by every kind."""

    clean_pod_policy: CleanPodPolicy | None = Field(
        None,
        description="Which pods are deleted when the job finishes: All, Running (running and "
        "pending pods; the default, an MPIJob's is None) or None (all are kept).",
    )
    ttl_seconds_after_finished: Int32 | None = Field(
        None,
        description="Seconds after the job finishes (succeeds or fails) before it is deleted with "
        "its pods; unset: never deleted.",
    )
    active_deadline_seconds: Int64 | None = Field(
        None,
        description="Seconds from the job's start it may run; then it fails (DeadlineExceeded) and "
        "its running pods are deleted. Unset: no deadline.",
    )
    backoff_limit: Int32 | None = Field(
        None,
        description="Restarts the job tolerates (in-place container restarts and pod "
        "recreations) before it fails with BackoffLimitExceeded; at least 0, unset: no limit.",
    )
    suspend: bool | None = Field(
        None,
        description="true deletes the job's pods and keeps it Suspended; false (the default) "
        "resumes it with new pods.",
    )
    managed_by: str | None = Field(
        None,
        description="The controller that runs the job: unset or kubetrain.io/operator (or "
        "Kubeflow's kubeflow.org/training-operator) is kubetrain; any other (e.g. "
        "kueue.x-k8s.io/multikueue) and kubetrain leaves the job alone.",
    )
    scheduling_policy: SchedulingPolicy | None = Field(
        None,
        description="Gang scheduling: the PodGroup kubetrain creates when it runs with a gang scheduler.",
    )
    pod_failure_policy: PodFailurePolicy | None = Field(
        None,
        description="Rules (as batch/v1 Job's podFailurePolicy) deciding what a failed pod means: "
        "fail the job, ignore, count, or restart the whole job.",
    )
    # operator/stall.py; kubetrain.io only (the kubeflow.org CRDs leave it out: there, the
    # annotation kubetrain.io/progress-deadline-seconds).
    progress_deadline_seconds: int | None = Field(
        default=None,
        ge=1,
        description="Seconds a Running job that reports its progress may go without a report "
        "before it is marked Stalled; at least 1, unset: no deadline.",
    )
    # operator/podstart.py; kubetrain.io only, as above (elsewhere the annotation
    # kubetrain.io/start-deadline-seconds).
    start_deadline_seconds: int | None = Field(
        default=None,
        ge=1,
        description="Seconds a scheduled pod may wait to start for a reason that does not pass "
        "(a wrong image, a missing ConfigMap) before the job fails (StartDeadlineExceeded); at "
        "least 1, unset: no deadline.",
    )


class JobCondition(KubeModel):
    type: ConditionType = Field(
        description="Created, Running, Restarting, Succeeded, Failed, Suspended, Stalled (no "
        "progress report in time) or PodsNotStarting."
    )
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str | None = Field(None, description="A CamelCase word saying why the condition changed.")
    message: str | None = Field(None, description="A human-readable account of the change.")
    last_update_time: Time | None = Field(None, description="When the condition was last written.")
    last_transition_time: Time | None = Field(None, description="When the status last changed.")


class LabelSelector(KubeModel):
    match_labels: dict[str, str] | None = Field(None, description="Labels a pod must have, key to value.")
    match_expressions: list[dict[str, Any]] | None = Field(
        None, description="metav1.LabelSelectorRequirements (key, operator, values) a pod must meet."
    )


class ReplicaStatus(KubeModel):
    """Pod counts of one replica type; `restarts` is persisted so an operator restart keeps it,
    `priorRestarts` is the part of it the present pods' container restart counts do not explain
    (the operator's own record: restart counts never come from pod metadata)."""

    active: Int32 | None = Field(None, description="Pods of this type that are running.")
    pending: int | None = Field(None, description="Pods of this type that are not running yet.")
    succeeded: Int32 | None = Field(None, description="Pods of this type that succeeded.")
    failed: Int32 | None = Field(None, description="Pods of this type that failed.")
    restarts: int | None = Field(
        None, description="Restarts of this type's pods and containers, as backoffLimit counts them."
    )
    prior_restarts: int | None = Field(
        None,
        description="The part of restarts the present pods' restart counts do not show "
        "(recreated pods, pods gone).",
    )
    selector: str | None = Field(
        None, description="The label selector of this type's pods, as a string (the scale subresource's)."
    )
    label_selector: LabelSelector | None = Field(None, description="The label selector of this type's pods.")


class CodeSyncStatus(KubeModel):
    """The code a job runs (KubeDL's `kubedl.io/git-sync-config`, kubetrain.jobs.codesync): the
    commit the first successful fetch resolved, which every later pod of the job is pinned to."""

    repository: str | None = Field(None, description="The git repository the code comes from.")
    revision: str | None = Field(None, description="What the annotation asks for: a branch, tag or commit.")
    commit: str | None = Field(
        None, description="The commit SHA the revision resolved to; every later pod runs it."
    )
    pod: str | None = Field(None, description="The pod whose fetch resolved the commit.")


class TensorBoardStatus(KubeModel):
    """The job's TensorBoard (KubeDL's `kubedl.io/tensorboard-config`, kubetrain.jobs.tensorboard)."""

    address: str | None = Field(
        None, description="Its in-cluster address, http://<service>.<namespace>.svc:6006/."
    )
    url: str | None = Field(None, description="Its address through the Ingress, when one is asked for.")
    phase: str | None = Field(None, description="The TensorBoard pod's phase.")
    expire_time: str | None = Field(
        None, description="When it is deleted: the job's finish plus the configured TTL."
    )
    config_hash: str | None = Field(
        None, description="Hash of the annotation the TensorBoard objects were last built from."
    )
    ingress: str | None = Field(None, description="Name of the Ingress kubetrain created for it.")
    error: str | None = Field(
        None, description="Why the annotation, edited since, is not applied (it names the field)."
    )


class JobStatus(KubeModel):
    """Observed state. `replicas` (desired pods, all types) and `active` (running pods, all types)
    are totals kept for the `Replicas`/`Active` printer columns (a JSONPath cannot sum a map)."""

    conditions: list[JobCondition] | None = Field(
        None, description="The job's lifecycle, oldest first; the last is its current state."
    )
    replica_statuses: dict[str, ReplicaStatus] | None = Field(
        None, description="Pod counts per replica type (e.g. Master, Worker)."
    )
    start_time: Time | None = Field(
        None, description="When the job started running; activeDeadlineSeconds counts from it."
    )
    completion_time: Time | None = Field(
        None, description="When the job finished; ttlSecondsAfterFinished counts from it."
    )
    last_reconcile_time: Time | None = Field(None, description="When the operator last reconciled the job.")
    observed_generation: int | None = Field(
        None, description="The metadata.generation of the spec this status was computed from."
    )
    replicas: int | None = Field(None, description="Desired pods, all replica types together.")
    active: int | None = Field(None, description="Running pods, all replica types together.")
    # Also the attempt that pods labelled `kubetrain.io/attempt` belong to (no label: attempt 0).
    job_restarts: int | None = Field(
        None, description="Times the whole job was restarted by a RestartJob failure rule."
    )
    # kubetrain.operator.completedindexes; starts over with the run (whole-job restart, suspend).
    completed_indexes: dict[str, str] | None = Field(
        None,
        description=(
            "Per replica type, the indexes whose pod succeeded in the current run, as a Job's "
            "completedIndexes (e.g. 0,2-3): such an index is not made again when its pod is deleted."
        ),
    )
    code_sync: CodeSyncStatus | None = Field(
        None, description="The code the job runs, when it syncs it from git (kubedl.io/git-sync-config)."
    )
    tensor_board: TensorBoardStatus | None = Field(
        None, description="The job's TensorBoard, when one is asked for (kubedl.io/tensorboard-config)."
    )
    # kubetrain.api.trainerstatus; written by the status endpoint only, kept by every reconcile.
    trainer_status: TrainerStatus | None = Field(
        None, description="The progress the training code last reported from inside its pods."
    )


class ObjectMetaFields(KubeModel):
    """Only what kubetrain reads from metadata; the full metadata dict is kept verbatim."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class JobSpecBase(KubeModel):
    run_policy: RunPolicy | None = Field(
        None, description="Job-wide policy: cleanup, deadlines, backoff, suspension, gang scheduling."
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        """The kind's replica map (`tfReplicaSpecs`, …); overridden per kind."""
        raise NotImplementedError


class JobBase(KubeModel):
    """Fields common to every job kind. `metadata` is the object's metadata, kept as a dict."""

    api_version: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    status: JobStatus | None = Field(None, description="The job's observed state, written by the operator.")
