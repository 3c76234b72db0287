"""Per-tenant quotas of TrainingPolicies (`spec.limits.tenantQuota`). Pure.

A tenant is the job's `tenancy.kubetrain.io/tenant` label (set from KubeDL's `kubedl.io/tenancy`
annotation, kubetrain.jobs.tenancy). A policy's tenant quota limits the tenant's jobs together:
`maxJobs` unfinished jobs, `maxReplicas` pods and `maxTotalResources` per resource, summed over
the tenant's unfinished jobs (no `Succeeded`/`Failed` condition; suspended ones count, as their
pods may come back at any time) that the policy applies to — its kinds, its namespaceSelector,
its jobSelector — plus the job being admitted, each counted as `maxReplicasPerJob` and
`maxTotalResources` count one job. A job without a tenant is neither counted nor limited.

`TenantJobs` is the webhook's view of the tenants' jobs, fed by a watch on the jobs labelled with
a tenant (no API call per review). The check is best-effort, as a quota enforced by an admission
webhook from a watch cache is: two jobs of one tenant admitted at the same moment (or while the
cache trails the API server) are each checked without the other, so a tenant can exceed the quota
by the jobs created within that window. ResourceQuota is exact only because the API server counts
in the same transaction; a training job's pods are not created by the user, so ResourceQuota on
pods cannot give a per-tenant answer across namespaces. On UPDATE the job's own earlier usage is
replaced by the new one, and (as every limit) only a violation the old object did not have denies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubetrain.api.labels import LABEL_TENANT
from kubetrain.api.podresources import pod_amounts
from kubetrain.api.policy import TenantQuota, TrainingPolicy
from kubetrain.api.quantity import format_quantity, is_binary, parse_quantity
from kubetrain.policy.limits import PolicyVerdict
from kubetrain.policy.matching import job_labels_of, policy_applies, select_by_job_labels, selector_matches
from kubetrain.policy.resources import replica_groups

FINISHED = ("Succeeded", "Failed")
PATH = "spec.limits.tenantQuota"

JobKey = tuple[str, str, str]  # (kind, namespace, name)


@dataclass(frozen=True)
class JobUsage:
    """What one unfinished job of a tenant holds."""

    kind: str
    namespace: str
    name: str
    tenant: str
    labels: Mapping[str, str]
    replicas: int
    resources: Mapping[str, Fraction]

    @property
    def key(self) -> JobKey:
        return (self.kind, self.namespace, self.name)


def tenant_of(job: Mapping[str, Any]) -> str:
    return job_labels_of(job).get(LABEL_TENANT, "")


def finished(job: Mapping[str, Any]) -> bool:
    status = job.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return any(
        isinstance(c, Mapping) and c.get("type") in FINISHED and c.get("status") == "True"
        for c in conditions or []
    )


def usage_of(job: Mapping[str, Any]) -> JobUsage | None:
    """The job's usage, or None when it has no tenant or is finished."""
    tenant = tenant_of(job)
    if not tenant or finished(job):
        return None
    meta = job.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    replicas = 0
    resources: dict[str, Fraction] = {}
    for group in replica_groups(dict(job)):
        replicas += group.replicas
        for name, amount in pod_amounts(group.template).items():
            resources[name] = resources.get(name, Fraction(0)) + amount * group.replicas
    return JobUsage(
        kind=str(job.get("kind") or ""),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        tenant=tenant,
        labels=job_labels_of(job),
        replicas=replicas,
        resources=resources,
    )


class TenantJobs:
    """The unfinished jobs of each tenant, fed by informer handlers (plain dicts; the kind is
    given by the handler, as a watch event's object may lack it)."""

    def __init__(self) -> None:
        self._jobs: dict[JobKey, JobUsage] = {}

    def on_job(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        usage = usage_of({**obj, "kind": kind})
        if usage is None:
            self._jobs.pop(key, None)
        else:
            self._jobs[key] = usage

    def on_job_update(self, kind: str, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.on_job(kind, new)

    def on_job_delete(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self._jobs.pop((kind, str(meta.get("namespace") or ""), str(meta.get("name") or "")), None)

    def of_tenant(self, tenant: str) -> list[JobUsage]:
        return [u for u in self._jobs.values() if u.tenant == tenant]

    def clear(self) -> None:
        self._jobs.clear()


def _counts(
    policy: TrainingPolicy, usage: JobUsage, namespace_labels: Callable[[str], Mapping[str, str]]
) -> bool:
    return policy_applies(policy, usage.kind, namespace_labels(usage.namespace)) and selector_matches(
        policy.spec.job_selector, usage.labels
    )


def quota_violations(
    job: Mapping[str, Any],
    quota: TenantQuota,
    policy: TrainingPolicy,
    others: Iterable[JobUsage],
    namespace_labels: Callable[[str], Mapping[str, str]],
) -> list[str]:
    """Lines `spec.limits.tenantQuota…: tenant "t": … exceeds …` for the policy's quota, with
    `job` (the one being admitted, already matched to the policy) and the tenant's other jobs."""
    mine = usage_of(job)
    if mine is None:
        return []
    counted = [
        u
        for u in others
        if u.tenant == mine.tenant and u.key != mine.key and _counts(policy, u, namespace_labels)
    ]
    everything = [*counted, mine]
    who = f'tenant "{mine.tenant}"'
    out: list[str] = []
    if quota.max_jobs is not None and len(everything) > quota.max_jobs:
        out.append(
            f"{PATH}.maxJobs: {who} would have {len(everything)} unfinished jobs "
            f"({len(counted)} already), exceeds {quota.max_jobs}"
        )
    if quota.max_replicas is not None:
        total = sum(u.replicas for u in everything)
        if total > quota.max_replicas:
            out.append(
                f"{PATH}.maxReplicas: {who} would have {total} replicas "
                f"({total - mine.replicas} in its other jobs), exceeds {quota.max_replicas}"
            )
    for name, raw in sorted((quota.max_total_resources or {}).items()):
        limit = parse_quantity(raw)
        used = sum((u.resources.get(name, Fraction(0)) for u in everything), Fraction(0))
        if used > limit:
            binary = is_binary(raw)
            others_total = used - mine.resources.get(name, Fraction(0))
            out.append(
                f"{PATH}.maxTotalResources[{name}]: {who} would use {format_quantity(used, binary=binary)} "
                f"({format_quantity(others_total, binary=binary)} in its other jobs), exceeds {raw}"
            )
    return out


def check_tenant_quotas(
    job: Mapping[str, Any],
    policies: Iterable[TrainingPolicy],
    tenant_jobs: TenantJobs,
    namespace_labels: Callable[[str], Mapping[str, str]],
) -> PolicyVerdict:
    """Every tenant quota of `policies` (already matched to the job by kind and namespace),
    as `policy "<name>": <line>` denials (Deny) or warnings (Warn)."""
    tenant = tenant_of(job)
    if not tenant:
        return PolicyVerdict()
    others = tenant_jobs.of_tenant(tenant)
    denials: list[str] = []
    warnings: list[str] = []
    for policy in sorted(select_by_job_labels(policies, job), key=lambda p: p.name):
        quota = policy.spec.limits.tenant_quota if policy.spec.limits is not None else None
        if quota is None:
            continue
        lines = [
            f'policy "{policy.name}": {line}'
            for line in quota_violations(job, quota, policy, others, namespace_labels)
        ]
        (warnings if policy.spec.effective_enforcement() == "Warn" else denials).extend(lines)
    return PolicyVerdict(denials=denials, warnings=warnings)
