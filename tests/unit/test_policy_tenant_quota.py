"""Per-tenant quotas of TrainingPolicies (kubetrain/policy/tenantquota.py): the tenant's
unfinished jobs the policy applies to, plus the new one, against maxJobs / maxReplicas /
maxTotalResources; Warn only warns; a job without a tenant is neither counted nor limited; an
UPDATE replaces the job's own usage; finished jobs and other kinds or namespaces do not count."""

from __future__ import annotations

from typing import Any

from jobs import job, replica

from kubetrain.policy.tenantquota import TenantJobs, check_tenant_quotas
from kubetrain.policy.validate_policy import parse_policy, validate_policy

Obj = dict[str, Any]
TENANT = "tenancy.kubetrain.io/tenant"


def policy(
    name: str = "quota", enforcement: str = "Deny", kinds: list[str] | None = None, **quota: Any
) -> Any:
    spec: Obj = {"limits": {"tenantQuota": quota}, "enforcement": enforcement}
    if kinds:
        spec["kinds"] = kinds
    return parse_policy(
        {"apiVersion": "kubetrain.io/v1", "kind": "TrainingPolicy", "metadata": {"name": name}, "spec": spec}
    )


def tjob(
    name: str,
    tenant: str | None,
    workers: int,
    *,
    kind: str = "PyTorchJob",
    ns: str = "ns",
    finished: bool = False,
) -> Obj:
    gpu = {"limits": {"nvidia.com/gpu": 4}}
    types = (
        {"Master": replica(kind, 1), "Worker": replica(kind, workers, resources=gpu)}
        if kind == "PyTorchJob"
        else {"Worker": replica(kind, workers, resources=gpu)}
    )
    obj = job(kind, name, types, namespace=ns)
    if tenant:
        obj["metadata"]["labels"] = {TENANT: tenant}
    if finished:
        obj["status"] = {"conditions": [{"type": "Failed", "status": "True"}]}
    return obj


def seen(*objs: Obj) -> TenantJobs:
    index = TenantJobs()
    for obj in objs:
        index.on_job(obj["kind"], obj)
    return index


def labels(_ns: str) -> dict[str, str]:
    return {}


def test_the_tenants_jobs_together_are_limited() -> None:
    index = seen(tjob("a1", "a", 2), tjob("a2", "a", 1), tjob("b1", "b", 8))
    quota = policy(maxJobs=3, maxReplicas=6, maxTotalResources={"nvidia.com/gpu": "20"})
    verdict = check_tenant_quotas(tjob("a3", "a", 2), [quota], index, labels)
    assert verdict.denials == [
        'policy "quota": spec.limits.tenantQuota.maxReplicas: tenant "a" would have 8 replicas '
        "(5 in its other jobs), exceeds 6",
    ]
    verdict = check_tenant_quotas(tjob("a3", "a", 3), [quota], index, labels)
    assert verdict.denials[-1] == (
        'policy "quota": spec.limits.tenantQuota.maxTotalResources[nvidia.com/gpu]: tenant "a" would use 24 '
        "(12 in its other jobs), exceeds 20"
    )
    assert check_tenant_quotas(tjob("a4", "a", 1), [policy(maxJobs=2)], index, labels).denials == [
        'policy "quota": spec.limits.tenantQuota.maxJobs: tenant "a" would have 3 unfinished jobs '
        "(2 already), exceeds 2"
    ]


def test_warn_only_warns_and_a_job_without_a_tenant_is_not_limited() -> None:
    index = seen(tjob("a1", "a", 2))
    verdict = check_tenant_quotas(tjob("a2", "a", 1), [policy(enforcement="Warn", maxJobs=1)], index, labels)
    assert verdict.allowed and len(verdict.warnings) == 1
    assert check_tenant_quotas(tjob("x", None, 50), [policy(maxJobs=0)], index, labels).allowed
    assert not seen(tjob("x", None, 1)).of_tenant("")


def test_finished_jobs_other_kinds_and_the_job_itself_do_not_count_twice() -> None:
    index = seen(tjob("a1", "a", 2, finished=True), tjob("t1", "a", 2, kind="TFJob"), tjob("a2", "a", 1))
    only_pytorch = policy(kinds=["PyTorchJob"], maxJobs=1)
    # a2 updated (same name): its own old usage is replaced, not added; t1 is another kind.
    assert check_tenant_quotas(tjob("a2", "a", 3), [only_pytorch], index, labels).allowed
    assert not check_tenant_quotas(tjob("a3", "a", 1), [only_pytorch], index, labels).allowed
    # A job that finishes or is deleted leaves the tenant's usage.
    index.on_job("PyTorchJob", tjob("a2", "a", 1, finished=True))
    assert check_tenant_quotas(tjob("a3", "a", 1), [only_pytorch], index, labels).allowed
    index.on_job_delete("TFJob", tjob("t1", "a", 2, kind="TFJob"))
    assert index.of_tenant("a") == []


def test_a_negative_or_malformed_quota_is_refused_naming_the_field() -> None:
    errors = validate_policy(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "TrainingPolicy",
            "metadata": {"name": "bad"},
            "spec": {
                "limits": {"tenantQuota": {"maxJobs": -1, "maxTotalResources": {"nvidia.com/gpu": "lots"}}}
            },
        }
    )
    text = " ".join(str(e) for e in errors)
    assert "spec.limits.tenantQuota.maxJobs" in text
    assert "spec.limits.tenantQuota.maxTotalResources[nvidia.com/gpu]" in text
