"""The example policies in examples/policies/ are valid and do what their comments say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from jobs import job, replica

from kubetrain.api.policy import TrainingPolicy
from kubetrain.policy import (
    apply_policy_defaults,
    check_policy_limits,
    matching_policies,
    parse_policy,
    validate_policy,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "policies"
NAMES = [
    "gpu-quota",
    "mandatory-deadline-ttl",
    "allowed-registries",
    "required-team-label",
    "team-default-queue",
    "tenant-quota",
]


def load(name: str) -> TrainingPolicy:
    return parse_policy(yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text()))


def ptjob(
    gpus_per_worker: int = 1,
    workers: int = 2,
    image: str = "registry.example.com/ml/train:1",
    labels: dict[str, str] | None = None,
    run_policy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    def rep(n: int, gpus: int) -> dict[str, Any]:
        return replica("PyTorchJob", n, image=image, resources={"limits": {"nvidia.com/gpu": gpus}})

    return job(
        "PyTorchJob",
        "bert",
        {"Master": rep(1, 0), "Worker": rep(workers, gpus_per_worker)},
        run_policy=run_policy,
        metadata_extra={"labels": labels or {}},
    )


@pytest.mark.parametrize("name", NAMES)
def test_example_is_a_valid_policy_named_after_its_file(name: str) -> None:
    raw = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    assert validate_policy(raw) == []
    assert load(name).name == name


def test_every_example_is_listed() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.yaml")) == sorted(NAMES)


def test_gpu_quota() -> None:
    policy = load("gpu-quota")
    assert matching_policies([policy], "PyTorchJob", {"team": "vision"}) == [policy]
    assert matching_policies([policy], "PyTorchJob", {"team": "nlp"}) == []
    verdict = check_policy_limits(ptjob(gpus_per_worker=8, workers=6), [policy])
    assert verdict.denials == [
        'policy "gpu-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 48 exceeds 32'
    ]
    assert check_policy_limits(ptjob(gpus_per_worker=8, workers=4), [policy]).allowed


def test_mandatory_deadline_ttl() -> None:
    policy = load("mandatory-deadline-ttl")
    assert matching_policies([policy], "TFJob", {"kubetrain.io/sandbox": "true"}) == []
    job = apply_policy_defaults(ptjob(), [policy]).obj
    assert job["spec"]["runPolicy"] == {"activeDeadlineSeconds": 259200, "ttlSecondsAfterFinished": 86400}
    assert check_policy_limits(job, [policy]).allowed
    long = ptjob(run_policy={"activeDeadlineSeconds": 10**6})
    long = apply_policy_defaults(long, [policy]).obj
    assert check_policy_limits(long, [policy]).denials == [
        'policy "mandatory-deadline-ttl": spec.runPolicy.activeDeadlineSeconds: 1000000 exceeds 604800'
    ]


def test_allowed_registries_warns_only() -> None:
    policy = load("allowed-registries")
    assert matching_policies([policy], "MXJob", {"environment": "staging"}) == [policy]
    assert matching_policies([policy], "MXJob", {"environment": "dev"}) == []
    assert check_policy_limits(ptjob(image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"), [policy]).allowed
    verdict = check_policy_limits(ptjob(image="quay.io/someone/miner:latest"), [policy])
    assert verdict.allowed
    assert len(verdict.warnings) == 2  # the Master's and the Worker's container
    assert verdict.warnings[0].startswith('policy "allowed-registries": spec.pytorchReplicaSpecs[Master]')


def test_required_team_label() -> None:
    policy = load("required-team-label")
    assert matching_policies([policy], "TFJob", {"kubernetes.io/metadata.name": "kube-system"}) == []
    assert matching_policies([policy], "TFJob", {"kubernetes.io/metadata.name": "ml"}) == [policy]
    assert check_policy_limits(ptjob(labels={"team": "a"}), [policy]).denials == [
        'policy "required-team-label": metadata.labels[cost-center]: required label is missing'
    ]
    assert check_policy_limits(ptjob(labels={"team": "a", "cost-center": "1"}), [policy]).allowed


def test_team_default_queue() -> None:
    policy = load("team-default-queue")
    assert matching_policies([policy], "MXJob", {"team": "nlp"}) == []
    job = apply_policy_defaults(ptjob(labels={"team": "nlp-research"}), [policy]).obj
    assert job["spec"]["runPolicy"] == {
        "cleanPodPolicy": "All",
        "backoffLimit": 3,
        "schedulingPolicy": {"queue": "nlp", "priorityClass": "nlp-normal"},
    }
    assert job["metadata"]["labels"] == {"team": "nlp-research"}  # the user's label wins


def test_tenant_quota_limits_only_the_vision_tenants_jobs() -> None:
    from kubetrain.jobs.defaulting import default_job

    policy = load("tenant-quota")

    def tenant_job(tenant: str, gpus: int, image: str) -> dict[str, Any]:
        obj = ptjob(gpus_per_worker=gpus, workers=3, image=image)
        obj["metadata"]["annotations"] = {"kubedl.io/tenancy": f'{{"tenant": "{tenant}"}}'}
        return default_job(obj).obj

    over = check_policy_limits(tenant_job("vision", 8, "registry.example.com/vision/x:1"), [policy])
    assert over.denials == [
        'policy "tenant-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 24 exceeds 16'
    ]
    assert check_policy_limits(tenant_job("vision", 4, "registry.example.com/vision/x:1"), [policy]).allowed
    assert check_policy_limits(tenant_job("nlp", 8, "docker.io/other:1"), [policy]).allowed
    # tenantQuota: the vision tenant's jobs together (3 workers x 4 GPUs = 12 each).
    from kubetrain.policy.tenantquota import TenantJobs, check_tenant_quotas

    running = TenantJobs()
    for name in ("v1", "v2"):
        obj = tenant_job("vision", 4, "registry.example.com/vision/x:1")
        obj["metadata"]["name"] = name
        running.on_job("PyTorchJob", obj)
    new = tenant_job("vision", 4, "registry.example.com/vision/x:1")
    assert check_tenant_quotas(new, [policy], running, lambda _: {}).denials == [
        'policy "tenant-quota": spec.limits.tenantQuota.maxTotalResources[nvidia.com/gpu]: '
        'tenant "vision" would use 36 (24 in its other jobs), exceeds 32'
    ]
    other = tenant_job("nlp", 4, "docker.io/other:1")
    assert check_tenant_quotas(other, [policy], running, lambda _: {}).allowed
