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

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist (checked by validate_policy)
    values: list[str] | None = None


class NamespaceSelector(KubeModel):
    """A metav1.LabelSelector over namespace labels. Absent or `{}` selects every namespace."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class SchedulingDefaults(KubeModel):
    queue: str | None = None
    priority_class: str | None = None


class RunPolicyDefaults(KubeModel):
    """Values for `spec.runPolicy` fields the user left unset."""

    clean_pod_policy: CleanPodPolicy | None = None
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    scheduling_policy: SchedulingDefaults | None = None


class PolicyDefaults(KubeModel):
    run_policy: RunPolicyDefaults | None = None
    # Labels added to the job's metadata when the job does not carry that key.
    labels: dict[str, str] | None = None


class TenantQuota(KubeModel):
    """Per-tenant totals over the tenant's unfinished jobs this policy applies to, the new job
    included (kubetrain.policy.tenantquota). The tenant is the job's `tenancy.kubetrain.io/tenant`
    label (set from `kubedl.io/tenancy`); a job without one is not counted or limited."""

    max_jobs: int | None = None
    # Pods, summed as maxReplicasPerJob counts them.
    max_replicas: int | None = None
    # Resource name -> quantity, summed as maxTotalResources counts them.
    max_total_resources: dict[str, Quantity] | None = None


class PolicyLimits(KubeModel):
    # Total pods of the job (sum of replicas; elastic PyTorch Workers count at maxReplicas).
    max_replicas_per_job: int | None = None
    # Resource name -> quantity, summed over replicas x containers (requests, else limits).
    max_total_resources: dict[str, Quantity] | None = None
    # Unset activeDeadlineSeconds (no deadline) also violates this limit.
    max_active_deadline_seconds: int | None = None
    require_active_deadline: bool | None = None
    require_ttl: bool | None = Field(default=None, alias="requireTTL")
    # Globs (fnmatch: `*` matches any run of characters including `/`) over the full image
    # reference, e.g. `registry.example.com/ml/*`, `docker.io/pytorch/pytorch:*`.
    allowed_images: list[str] | None = None
    # Label keys every job must carry in metadata.labels.
    required_labels: list[str] | None = None
    require_gang_scheduling: bool | None = None
    # Pod Security Standards level the job's pod templates must meet (kubetrain.policy.podsecurity),
    # for namespaces without a `pod-security.kubernetes.io/enforce` label (the stricter one wins).
    pod_security: Literal["baseline", "restricted"] | None = None
    # Per-tenant quota: the tenant's jobs together (best-effort at admission, see tenantquota).
    tenant_quota: TenantQuota | None = None


class TrainingPolicySpec(KubeModel):
    namespace_selector: NamespaceSelector | None = None
    # A label selector over the job's own labels (after the built-in defaults, so KubeDL's tenancy
    # labels `tenancy.kubetrain.io/tenant`, … are there): per-tenant rules. Absent or `{}`: every job.
    job_selector: NamespaceSelector | None = None
    # Job kinds this policy applies to; absent or empty = every kind.
    kinds: list[str] | None = None
    defaults: PolicyDefaults | None = None
    limits: PolicyLimits | None = None
    enforcement: Enforcement | None = None  # Deny when unset

    def effective_enforcement(self) -> Enforcement:
        return self.enforcement or "Deny"


class PolicyCondition(KubeModel):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None
    last_transition_time: str | None = None


class TrainingPolicyStatus(KubeModel):
    observed_generation: int | None = None
    valid: bool | None = None
    message: str | None = None
    conditions: list[PolicyCondition] | None = None


class TrainingPolicy(KubeModel):
    api_version: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: TrainingPolicySpec = Field(default_factory=TrainingPolicySpec)
    status: TrainingPolicyStatus | None = None

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))
