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
    name: str | None = None
    status: DependsOnStatus | None = None


class JobTemplateSpec(KubeModel):
    """A batch/v1 JobTemplateSpec: metadata and the Job spec (its pod template inside)."""

    metadata: dict[str, Any] | None = None
    spec: dict[str, Any] | None = None


class ReplicatedJob(KubeModel):
    name: str | None = None
    group_name: str | None = None
    template: JobTemplateSpec | None = None
    replicas: int | None = None
    depends_on: list[DependsOn] | None = None


class Network(KubeModel):
    enable_dns_hostnames: bool | None = Field(default=None, alias="enableDNSHostnames")
    subdomain: str | None = None
    publish_not_ready_addresses: bool | None = None


class SuccessPolicy(KubeModel):
    operator: Operator | None = None
    target_replicated_jobs: list[str] | None = None


class FailurePolicyRule(KubeModel):
    name: str | None = None
    action: FailurePolicyAction | None = None
    on_job_failure_reasons: list[str] | None = None
    on_job_failure_message_patterns: list[str] | None = None
    target_replicated_jobs: list[str] | None = None


class FailurePolicy(KubeModel):
    max_restarts: int | None = None
    restart_strategy: RestartStrategy | None = None
    rules: list[FailurePolicyRule] | None = None


class StartupPolicy(KubeModel):
    startup_policy_order: StartupPolicyOrder | None = None


class Coordinator(KubeModel):
    replicated_job: str | None = None
    job_index: int | None = None
    pod_index: int | None = None


class JobSetSpec(KubeModel):
    replicated_jobs: list[ReplicatedJob] | None = None
    network: Network | None = None
    success_policy: SuccessPolicy | None = None
    failure_policy: FailurePolicy | None = None
    startup_policy: StartupPolicy | None = None
    suspend: bool | None = None
    coordinator: Coordinator | None = None
    managed_by: str | None = None
    ttl_seconds_after_finished: int | None = None
    # PersistentVolumeClaim templates and their retention policy: validated with JobSet's rules
    # and run (the PVCs created, their volumes added to the pods that mount them) by
    # kubetrain/jobs/trainjob/volumeclaims.py; kept as plain dicts here.
    volume_claim_policies: list[dict[str, Any]] | None = None
