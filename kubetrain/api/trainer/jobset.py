"""The JobSet `v1alpha2` spec a Trainer runtime carries as its `template` (field names of
kubernetes-sigs/jobset v0.12). kubetrain runs it itself — no JobSet controller — so only the
shape is here; the batch/v1 Job templates inside stay plain dicts (validated by the webhook
against the PodTemplateSpec schema). Pure."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kubetrain.api.common import KubeModel

DependsOnStatus = Literal["Ready", "Complete"]
Operator = Literal["All", "Any"]
FailurePolicyAction = Literal[
    "FailJobSet",
    "RestartJobSet",
    "RestartJobSetAndIgnoreMaxRestarts",
    "RestartJob",
    "RestartJobAndIgnoreMaxRestarts",
]
# JobSet v0.12's enum (Trainer's runtime CRDs carry it). `InPlaceRestart` (JobSet KEP 467) is in
# the schema so that the API server reaches the CRD's CEL rule that explains why kubetrain refuses
# it (`kubetrain.jobs.trainerrules.IN_PLACE_RESTART`); `RESTART_STRATEGIES` are the ones it runs.
RestartStrategy = Literal["Recreate", "BlockingRecreate", "InPlaceRestart"]
RESTART_STRATEGIES = ("Recreate", "BlockingRecreate")
IN_PLACE_RESTART = "InPlaceRestart"
StartupPolicyOrder = Literal["AnyOrder", "InOrder"]
DEPENDS_ON_STATUSES = ("Ready", "Complete")
FAILURE_POLICY_ACTIONS = (
    "FailJobSet",
    "RestartJobSet",
    "RestartJobSetAndIgnoreMaxRestarts",
    "RestartJob",
    "RestartJobAndIgnoreMaxRestarts",
)
# The actions that restart one failed Job alone; a runtime with one has at most this many
# `replicas` per replicated job (JobSet's webhook: the 1024 items its `jobRestarts` may hold).
JOB_RESTART_ACTIONS = ("RestartJob", "RestartJobAndIgnoreMaxRestarts")
MAX_REPLICAS_WITH_JOB_RESTARTS = 1024


class DependsOn(KubeModel):
    name: str | None = Field(None, description="The replicated job this one waits for.")
    status: DependsOnStatus | None = Field(
        None, description="What it waits for: Ready (its pods are ready) or Complete (it succeeded)."
    )


class JobTemplateSpec(KubeModel):
    """A batch/v1 JobTemplateSpec: metadata and the Job spec (its pod template inside)."""

    metadata: dict[str, Any] | None = Field(None, description="Labels and annotations of the step's Jobs.")
    spec: dict[str, Any] | None = Field(
        None,
        description="A batch/v1 JobSpec (`kubectl explain job.spec`), its pod template a core/v1 "
        "PodTemplateSpec (`kubectl explain pod.spec`); checked by kubetrain's webhook, not field by "
        "field in this schema.",
    )


class ReplicatedJob(KubeModel):
    name: str | None = Field(
        None, description="The step's name, unique in the runtime, e.g. node, launcher, dataset-initializer."
    )
    group_name: str | None = Field(
        None, description="A group label shared by replicated jobs. Defaults to default."
    )
    template: JobTemplateSpec | None = Field(
        None, description="The batch/v1 Job each replica of this step is made from."
    )
    replicas: int | None = Field(None, description="How many Jobs of this template to run. Defaults to 1.")
    depends_on: list[DependsOn] | None = Field(
        None, description="Steps that must be Ready or Complete before this one starts (at most 5)."
    )


class Network(KubeModel):
    enable_dns_hostnames: bool | None = Field(
        default=None,
        alias="enableDNSHostnames",
        description="true (the default) gives every pod a DNS name through a headless Service.",
    )
    subdomain: str | None = Field(
        None, description="The headless Service's name; unset: the TrainJob's name."
    )
    publish_not_ready_addresses: bool | None = Field(
        None, description="true (the default): pods get DNS records before they are ready."
    )


class SuccessPolicy(KubeModel):
    operator: Operator | None = Field(
        None, description="All: every targeted Job must succeed; Any: one is enough."
    )
    target_replicated_jobs: list[str] | None = Field(
        None, description="The replicated jobs the rule looks at; unset: all."
    )


class FailurePolicyRule(KubeModel):
    name: str | None = Field(None, description="The rule's name, unique in the policy.")
    action: FailurePolicyAction | None = Field(
        None,
        description="What a matching Job failure does: FailJobSet, RestartJobSet, "
        "RestartJobSetAndIgnoreMaxRestarts, RestartJob or RestartJobAndIgnoreMaxRestarts.",
    )
    on_job_failure_reasons: list[str] | None = Field(
        None, description="Job failure reasons that match, e.g. BackoffLimitExceeded; unset: any."
    )
    on_job_failure_message_patterns: list[str] | None = Field(
        None, description="Regular expressions over the Job failure message that match; unset: any."
    )
    target_replicated_jobs: list[str] | None = Field(
        None, description="The replicated jobs whose failures the rule covers; unset: all."
    )


class FailurePolicy(KubeModel):
    max_restarts: int | None = Field(
        None, description="How often the TrainJob may restart before it fails. Defaults to 0."
    )
    restart_strategy: RestartStrategy | None = Field(
        None,
        description="How a restart replaces the Jobs: Recreate (the default) or BlockingRecreate "
        "(all old pods gone first); InPlaceRestart is refused.",
    )
    rules: list[FailurePolicyRule] | None = Field(
        None, description="Checked in order on a Job failure; the first match decides, else a restart."
    )


class StartupPolicy(KubeModel):
    startup_policy_order: StartupPolicyOrder | None = Field(
        None,
        description="AnyOrder (the default) starts every step at once; InOrder each once the "
        "previous is ready.",
    )


class Coordinator(KubeModel):
    replicated_job: str | None = Field(None, description="The replicated job of the coordinator pod.")
    job_index: int | None = Field(None, description="The Job index of the coordinator pod. Defaults to 0.")
    pod_index: int | None = Field(None, description="The pod index of the coordinator pod. Defaults to 0.")


class JobSetSpec(KubeModel):
    replicated_jobs: list[ReplicatedJob] | None = Field(
        None, description="The steps: each a Job template and how many Jobs of it to run."
    )
    network: Network | None = Field(
        None, description="DNS for the pods: a headless Service and pod hostnames."
    )
    success_policy: SuccessPolicy | None = Field(
        None, description="When the TrainJob has succeeded; unset: when every Job succeeded."
    )
    failure_policy: FailurePolicy | None = Field(
        None, description="What a failed Job does: fail the TrainJob, or restart it up to maxRestarts."
    )
    startup_policy: StartupPolicy | None = Field(None, description="The order the steps start in.")
    suspend: bool | None = Field(None, description="true suspends every Job of the JobSet.")
    coordinator: Coordinator | None = Field(
        None, description="A pod whose address every pod gets (the jobset.sigs.k8s.io/coordinator label)."
    )
    managed_by: str | None = Field(None, description="The JobSet's controller; kubetrain runs it itself.")
    ttl_seconds_after_finished: int | None = Field(
        None, description="Seconds after the JobSet finishes before it is deleted."
    )
    # Validated with JobSet's rules and run by kubetrain/jobs/trainjob/volumeclaims.py.
    volume_claim_policies: list[dict[str, Any]] | None = Field(
        None,
        description="PersistentVolumeClaim templates (and their retention policy) created for the "
        "TrainJob and mounted in the pods whose containers name them.",
    )
