"""Platform limits (docs/behaviour.md §9): one test per limit, several policies, Warn vs Deny."""

from __future__ import annotations

from typing import Any

import pytest
from jobs import job

from kubetrain.api.policy import TrainingPolicy
from kubetrain.policy import check_policy_limits, parse_policy


def policy(name: str, limits: dict[str, Any], enforcement: str | None = None, **spec: Any) -> TrainingPolicy:
    body: dict[str, Any] = {"limits": limits, **spec}
    if enforcement:
        body["enforcement"] = enforcement
    return parse_policy(
        {"apiVersion": "kubetrain.io/v1", "kind": "TrainingPolicy", "metadata": {"name": name}, "spec": body}
    )


def container(image: str = "registry.example.com/ml/train:1", **resources: dict[str, Any]) -> dict[str, Any]:
    return {"name": "pytorch", "image": image, "resources": resources}


def replica(
    replicas: int | None, *containers: dict[str, Any], init: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers) or [container()]}
    if init:
        spec["initContainers"] = init
    out: dict[str, Any] = {"template": {"spec": spec}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def ptjob(
    workers: dict[str, Any] | None = None, master: dict[str, Any] | None = None, **run_policy: Any
) -> dict[str, Any]:
    return job(
        "PyTorchJob",
        "train",
        {"Master": master or replica(1), "Worker": workers or replica(2)},
        namespace="vision",
        run_policy=run_policy or None,
        metadata_extra={"labels": {"team": "vision"}},
    )


GPU: dict[str, Any] = {"limits": {"nvidia.com/gpu": 8}}


def test_gpu_total_over_quota_is_denied_with_policy_field_and_limit() -> None:
    job = ptjob(workers=replica(6, container(**GPU)))
    verdict = check_policy_limits(job, [policy("gpu-quota", {"maxTotalResources": {"nvidia.com/gpu": 32}})])
    assert verdict.denials == [
        'policy "gpu-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 48 exceeds 32'
    ]
    assert verdict.warnings == []
    assert not verdict.allowed


def test_gpu_total_at_quota_is_admitted() -> None:
    job = ptjob(workers=replica(4, container(**GPU)))
    verdict = check_policy_limits(job, [policy("gpu-quota", {"maxTotalResources": {"nvidia.com/gpu": 32}})])
    assert verdict.allowed and verdict.warnings == []


def test_resources_sum_replicas_times_containers_requests_before_limits() -> None:
    # Master: 1 pod x (2 + 1) cpu; Workers: 3 pods x (request 1500m, limit 4 ignored) + sidecar 500m.
    master = replica(None, container(requests={"cpu": "2"}), container(limits={"cpu": 1}))
    workers = replica(
        3,
        container(requests={"cpu": "1500m"}, limits={"cpu": "4"}),
        container(requests={"cpu": "500m"}),
    )
    job = ptjob(workers=workers, master=master)
    # total = 3 + 3 * 2 = 9
    assert check_policy_limits(job, [policy("cpu", {"maxTotalResources": {"cpu": 9}})]).allowed
    verdict = check_policy_limits(job, [policy("cpu", {"maxTotalResources": {"cpu": "8500m"}})])
    # Both replica types use cpu: the path is the replica map.
    assert verdict.denials == ['policy "cpu": spec.pytorchReplicaSpecs: total cpu 9 exceeds 8500m']


def test_memory_total_is_printed_in_the_limit_units() -> None:
    job = ptjob(workers=replica(5, container(requests={"memory": "16Gi"})), master=replica(1))
    verdict = check_policy_limits(job, [policy("mem", {"maxTotalResources": {"memory": "64Gi"}})])
    assert verdict.denials == [
        'policy "mem": spec.pytorchReplicaSpecs[Worker]: total memory 80Gi exceeds 64Gi'
    ]


def test_init_containers_count_as_the_scheduler_counts_them() -> None:
    # A regular init container runs alone: the pod needs max(containers, init) = 4 GPUs.
    init = [
        {
            "name": "warmup",
            "image": "registry.example.com/x:1",
            "resources": {"limits": {"nvidia.com/gpu": 4}},
        }
    ]
    job = ptjob(workers=replica(2, container(**GPU), init=init))
    quota = [policy("q", {"maxTotalResources": {"nvidia.com/gpu": 16}})]
    assert check_policy_limits(job, quota).allowed  # 2 x max(8, 4)
    # A sidecar (restartPolicy Always) keeps running next to the containers: 8 + 4 per pod.
    init[0]["restartPolicy"] = "Always"
    job = ptjob(workers=replica(2, container(**GPU), init=init))
    assert check_policy_limits(job, quota).denials == [
        'policy "q": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 24 exceeds 16'
    ]


def test_replicas_default_to_one_and_zero_replicas_use_nothing() -> None:
    job = ptjob(workers=replica(0, container(**GPU)), master=replica(None, container(**GPU)))
    assert check_policy_limits(job, [policy("q", {"maxTotalResources": {"nvidia.com/gpu": 8}})]).allowed


def test_max_replicas_per_job() -> None:
    job = ptjob(workers=replica(40))
    verdict = check_policy_limits(job, [policy("size", {"maxReplicasPerJob": 32})])
    assert verdict.denials == ['policy "size": spec.pytorchReplicaSpecs: total replicas 41 exceeds 32']
    assert check_policy_limits(
        ptjob(workers=replica(31)), [policy("size", {"maxReplicasPerJob": 32})]
    ).allowed


def test_elastic_workers_count_at_max_replicas() -> None:
    job = ptjob(workers=replica(2))
    job["spec"]["elasticPolicy"] = {"minReplicas": 2, "maxReplicas": 10}
    verdict = check_policy_limits(job, [policy("size", {"maxReplicasPerJob": 8})])
    assert verdict.denials == ['policy "size": spec.pytorchReplicaSpecs: total replicas 11 exceeds 8']


def test_max_active_deadline() -> None:
    limit = [policy("deadline", {"maxActiveDeadlineSeconds": 86400})]
    assert check_policy_limits(ptjob(activeDeadlineSeconds=86400), limit).allowed
    assert check_policy_limits(ptjob(activeDeadlineSeconds=172800), limit).denials == [
        'policy "deadline": spec.runPolicy.activeDeadlineSeconds: 172800 exceeds 86400'
    ]
    # No deadline at all runs longer than any maximum.
    assert check_policy_limits(ptjob(), limit).denials == [
        'policy "deadline": spec.runPolicy.activeDeadlineSeconds: required, at most 86400'
    ]


def test_require_active_deadline_and_ttl() -> None:
    limit = [policy("hygiene", {"requireActiveDeadline": True, "requireTTL": True})]
    assert check_policy_limits(ptjob(), limit).denials == [
        'policy "hygiene": spec.runPolicy.activeDeadlineSeconds: required',
        'policy "hygiene": spec.runPolicy.ttlSecondsAfterFinished: required',
    ]
    ok = ptjob(activeDeadlineSeconds=3600, ttlSecondsAfterFinished=0)
    assert check_policy_limits(ok, limit).allowed


@pytest.mark.parametrize(
    ("image", "allowed"),
    [
        ("registry.example.com/ml/train:1", True),
        ("registry.example.com/ml/team/train@sha256:abc", True),
        ("registry.example.com.evil.io/ml/train:1", False),
        ("evil.io/registry.example.com/ml/x", False),
        ("pytorch/pytorch:2.3.0-cuda12.1", True),  # docker.io/pytorch/pytorch:*
        ("docker.io/pytorch/pytorch:2.3.0", True),
        ("pytorch/torchserve:1", False),
        ("python:3.11", False),  # docker.io/library/python:3.11
    ],
)
def test_allowed_images_match_the_full_reference(image: str, allowed: bool) -> None:
    globs = ["registry.example.com/ml/*", "docker.io/pytorch/pytorch:*"]
    job = ptjob(workers=replica(1, container(image=image)))
    verdict = check_policy_limits(job, [policy("registries", {"allowedImages": globs})])
    assert verdict.allowed is allowed
    if not allowed:
        assert verdict.denials[0].startswith(
            'policy "registries": spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image: "'
        )
        assert verdict.denials[0].endswith(
            "is not allowed: must match one of registry.example.com/ml/*, docker.io/pytorch/pytorch:*"
        )


def test_allowed_images_checks_init_containers_and_names_the_normalised_image() -> None:
    init = [{"name": "fetch", "image": "busybox"}]
    job = ptjob(workers=replica(1, container(), init=init))
    verdict = check_policy_limits(job, [policy("registries", {"allowedImages": ["registry.example.com/*"]})])
    assert verdict.denials == [
        'policy "registries": spec.pytorchReplicaSpecs[Worker].template.spec.initContainers[0].image: '
        '"docker.io/library/busybox" is not allowed: must match one of registry.example.com/*'
    ]


def test_required_labels() -> None:
    limit = [policy("labels", {"requiredLabels": ["team", "cost-center"]})]
    assert check_policy_limits(ptjob(), limit).denials == [
        'policy "labels": metadata.labels[cost-center]: required label is missing'
    ]


def test_require_gang_scheduling() -> None:
    limit = [policy("gang", {"requireGangScheduling": True})]
    assert check_policy_limits(ptjob(), limit).denials == [
        'policy "gang": spec.runPolicy.schedulingPolicy.minAvailable: required (gang scheduling)'
    ]
    job = ptjob(schedulingPolicy={"minAvailable": 3})
    assert check_policy_limits(job, limit, gang_scheduling=True).allowed
    assert check_policy_limits(job, limit).allowed
    assert check_policy_limits(job, limit, gang_scheduling=False).denials == [
        'policy "gang": spec.runPolicy.schedulingPolicy: gang scheduling required, '
        "but the operator runs without a gang scheduler"
    ]


def test_warn_mode_returns_the_same_text_as_warnings_and_admits() -> None:
    job = ptjob(workers=replica(6, container(**GPU)))
    deny = check_policy_limits(job, [policy("gpu-quota", {"maxTotalResources": {"nvidia.com/gpu": 32}})])
    warn = check_policy_limits(
        job, [policy("gpu-quota", {"maxTotalResources": {"nvidia.com/gpu": 32}}, enforcement="Warn")]
    )
    assert warn.allowed
    assert warn.denials == []
    assert warn.warnings == deny.denials


def test_every_limit_of_every_policy_applies_in_name_order() -> None:
    job = ptjob(workers=replica(6, container(image="docker.io/evil/miner", **GPU)))
    policies = [
        policy("z-registries", {"allowedImages": ["registry.example.com/*"]}, enforcement="Warn"),
        policy("gpu-quota", {"maxTotalResources": {"nvidia.com/gpu": 32}, "requireTTL": True}),
        policy("a-size", {"maxReplicasPerJob": 4}),
    ]
    verdict = check_policy_limits(job, policies)
    assert verdict.denials == [
        'policy "a-size": spec.pytorchReplicaSpecs: total replicas 7 exceeds 4',
        'policy "gpu-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 48 exceeds 32',
        'policy "gpu-quota": spec.runPolicy.ttlSecondsAfterFinished: required',
    ]
    assert verdict.warnings == [
        'policy "z-registries": spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image: '
        '"docker.io/evil/miner" is not allowed: must match one of registry.example.com/*'
    ]


def test_other_kinds_use_their_replica_map() -> None:
    job = {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf"},
        "spec": {"tfReplicaSpecs": {"PS": replica(2), "Worker": replica(4, container(**GPU))}},
    }
    verdict = check_policy_limits(job, [policy("gpu-quota", {"maxTotalResources": {"nvidia.com/gpu": 16}})])
    assert verdict.denials == [
        'policy "gpu-quota": spec.tfReplicaSpecs[Worker]: total nvidia.com/gpu 32 exceeds 16'
    ]


def test_policy_without_limits_and_unknown_kind_admit() -> None:
    assert check_policy_limits(ptjob(), [policy("none", {})]).allowed
    job = {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}}
    assert check_policy_limits(job, [policy("size", {"maxReplicasPerJob": 0})]).allowed
