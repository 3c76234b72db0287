"""TrainingPolicy (kubetrain.io/v1, cluster-scoped): platform rules for training jobs.

A platform team writes policies; the webhook applies every policy whose `namespaceSelector`
matches the job's namespace and whose `kinds` (empty = all kinds) include the job's kind:
`defaults` in the mutating step (only to fields the user left unset; policies in name order,
the first one that sets a field wins), `limits` in the validating step (every limit of every
matching policy applies). `enforcement: Warn` turns denials into admission warnings.

Example::

    apiVersion: kubetrain.io/v1
    kind: TrainingPolicy
    metadata: {name: gpu-quota}
    spec:
      namespaceSelector: {matchLabels: {team: vision}}
      kinds: [PyTorchJob]
      limits:
        maxTotalResources: {nvidia.com/gpu: 32}
      enforcement: Deny

The semantic checks (selector syntax, globs, negative limits, unknown kinds) live in
`kubetrain.policy.validate_policy`; the models here only give the shape.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kubetrain.api.common import CleanPodPolicy, KubeModel, Quantity

GROUP = "kubetrain.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TrainingPolicy"
PLURAL = "trainingpolicies"
SINGULAR = "trainingpolicy"
SHORT_NAMES: tuple[str, ...] = ("tpol",)

Enforcement = Literal["Deny", "Warn"]
ENFORCEMENTS: tuple[str, ...] = ("Deny", "Warn")
SELECTOR_OPERATORS: tuple[str, ...] = ("In", "NotIn", "Exists", "DoesNotExist")


class LabelSelectorRequirement(KubeModel):
    """One `matchExpressions` entry of a metav1.LabelSelector."""

    key: str = Field(description="The label key the requirement is about.")
    # Checked by validate_policy.
    operator: str = Field(description="In, NotIn, Exists or DoesNotExist.")
    values: list[str] | None = Field(
        None, description="The values for In and NotIn (at least one); empty for Exists and DoesNotExist."
    )


class NamespaceSelector(KubeModel):
    """A metav1.LabelSelector over namespace labels. Absent or `{}` selects every namespace."""

    match_labels: dict[str, str] | None = Field(
        None, description="Labels that must all be present with these values."
    )
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        None, description="Requirements that must all hold."
    )


class SchedulingDefaults(KubeModel):
    queue: str | None = Field(None, description="Default runPolicy.schedulingPolicy.queue.")
    priority_class: str | None = Field(None, description="Default runPolicy.schedulingPolicy.priorityClass.")


class RunPolicyDefaults(KubeModel):
    """Values for `spec.runPolicy` fields the user left unset."""

    clean_pod_policy: CleanPodPolicy | None = Field(
        None, description="Default runPolicy.cleanPodPolicy: All, Running or None."
    )
    ttl_seconds_after_finished: int | None = Field(
        None, description="Default runPolicy.ttlSecondsAfterFinished, in seconds."
    )
    active_deadline_seconds: int | None = Field(
        None, description="Default runPolicy.activeDeadlineSeconds, in seconds."
    )
    backoff_limit: int | None = Field(None, description="Default runPolicy.backoffLimit.")
    suspend: bool | None = Field(None, description="Default runPolicy.suspend.")
    managed_by: str | None = Field(None, description="Default runPolicy.managedBy.")
    scheduling_policy: SchedulingDefaults | None = Field(
        None, description="Defaults of runPolicy.schedulingPolicy's queue and priorityClass."
    )


class PolicyDefaults(KubeModel):
    run_policy: RunPolicyDefaults | None = Field(
        None, description="Values for the job's spec.runPolicy fields the user left unset."
    )
    labels: dict[str, str] | None = Field(
        None, description="Labels added to the job's metadata where the job has no label of that key."
    )


class TenantQuota(KubeModel):
    """Per-tenant totals over the tenant's unfinished jobs this policy applies to, the new job
    included (kubetrain.policy.tenantquota). The tenant is the job's `tenancy.kubetrain.io/tenant`
    label (set from `kubedl.io/tenancy`); a job without one is not counted or limited."""

    max_jobs: int | None = Field(None, description="The most unfinished jobs a tenant may have.")
    max_replicas: int | None = Field(
        None, description="The most pods of a tenant's unfinished jobs, counted as maxReplicasPerJob counts."
    )
    max_total_resources: dict[str, Quantity] | None = Field(
        None,
        description="Resource name to the most a tenant's unfinished jobs may ask for together, "
        "counted as maxTotalResources counts.",
    )


class PolicyLimits(KubeModel):
    max_replicas_per_job: int | None = Field(
        None,
        description="The most pods a job may have, all replica types together (elastic Workers "
        "count at maxReplicas).",
    )
    max_total_resources: dict[str, Quantity] | None = Field(
        None,
        description="Resource name to the most a job may ask for, summed over its pods and "
        "containers (requests, else limits), e.g. nvidia.com/gpu: 32.",
    )
    max_active_deadline_seconds: int | None = Field(
        None,
        description="The longest runPolicy.activeDeadlineSeconds allowed; a job without a deadline "
        "violates it too.",
    )
    require_active_deadline: bool | None = Field(
        None, description="true: every job must set runPolicy.activeDeadlineSeconds."
    )
    require_ttl: bool | None = Field(
        default=None,
        alias="requireTTL",
        description="true: every job must set runPolicy.ttlSecondsAfterFinished.",
    )
    allowed_images: list[str] | None = Field(
        None,
        description="Globs every container image must match, e.g. registry.example.com/ml/* (`*` "
        "matches any characters, / included); unset: any image.",
    )
    required_labels: list[str] | None = Field(
        None, description="Label keys every job must carry in metadata.labels."
    )
    require_gang_scheduling: bool | None = Field(
        None, description="true: every job must be gang-scheduled (the operator runs with a gang scheduler)."
    )
    pod_security: Literal["baseline", "restricted"] | None = Field(
        None,
        description="Pod Security Standard (baseline or restricted) the job's pod templates must "
        "meet where the namespace has no pod-security.kubernetes.io/enforce label; the stricter wins.",
    )
    tenant_quota: TenantQuota | None = Field(
        None,
        description="Limits on a tenant's unfinished jobs together (the tenant is the job's "
        "tenancy.kubetrain.io/tenant label); checked at admission, best-effort.",
    )


class TrainingPolicySpec(KubeModel):
    namespace_selector: NamespaceSelector | None = Field(
        None,
        description="The namespaces (by their labels) whose jobs the policy applies to; unset or {}: all.",
    )
    # After the built-in defaults, so KubeDL's tenancy labels are there.
    job_selector: NamespaceSelector | None = Field(
        None,
        description="A label selector over the job's own labels (tenancy.kubetrain.io/tenant "
        "included): per-tenant rules. Unset or {}: every job.",
    )
    kinds: list[str] | None = Field(
        None, description="Job kinds the policy applies to, e.g. PyTorchJob; unset or empty: every kind."
    )
    defaults: PolicyDefaults | None = Field(
        None,
        description="Values set on jobs for fields the user left unset; policies apply in name "
        "order and the first that sets a field wins.",
    )
    limits: PolicyLimits | None = Field(
        None, description="Rules every job must meet; every limit of every matching policy applies."
    )
    enforcement: Enforcement | None = Field(
        None,
        description="Deny (the default) refuses a job that breaks a limit; Warn admits it with a warning.",
    )

    def effective_enforcement(self) -> Enforcement:
        return self.enforcement or "Deny"


class PolicyCondition(KubeModel):
    type: str = Field(description="The condition's type: Valid.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str | None = Field(None, description="A CamelCase word saying why.")
    message: str | None = Field(None, description="A human-readable account.")
    observed_generation: int | None = Field(None, description="The policy generation the condition is about.")
    last_transition_time: str | None = Field(None, description="When the status last changed.")


class TrainingPolicyStatus(KubeModel):
    observed_generation: int | None = Field(None, description="The policy generation last checked.")
    valid: bool | None = Field(
        None, description="Whether the policy is valid; an invalid one is not applied to any job."
    )
    message: str | None = Field(None, description="What is wrong with an invalid policy.")
    conditions: list[PolicyCondition] | None = Field(None, description="The policy's Valid condition.")


class TrainingPolicy(KubeModel):
    api_version: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: TrainingPolicySpec = Field(
        default_factory=TrainingPolicySpec,
        description="Which jobs the policy applies to, the defaults it sets and the limits it enforces.",
    )
    status: TrainingPolicyStatus | None = Field(
        None, description="Whether the operator found the policy valid."
    )

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))
