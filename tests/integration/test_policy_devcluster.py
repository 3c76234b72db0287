"""TrainingPolicy end to end through devcluster: the real webhook server over TLS, fed by watches.

A namespace labelled for a team gets that team's defaults (written into the stored job) and
limits (a violating create is refused naming policy, field and limit); relabelling the
namespace changes what applies on the next request, without restarting anything.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from admission import training_policy
from jobs import job, replica

from kubetrain.certs.generate import generate_bundle
from kubetrain.devcluster import DevCluster
from kubetrain.jobs.crdgen import all_crds
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    TRAINING_POLICIES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    job_resource,
)
from kubetrain.policy import PolicyIndex
from kubetrain.webhook.configurations import webhook_configurations
from kubetrain.webhook.policies import PolicyAdmission, PolicyWatcher
from kubetrain.webhook.server import WebhookServer

from .controller_support import eventually

PYTORCHJOBS = job_resource("PyTorchJob")

Obj = dict[str, Any]


def ptjob(name: str, workers: int, gpus: int = 8) -> Obj:
    def rep(n: int, g: int) -> Obj:
        gpu = {"limits": {"nvidia.com/gpu": g}} if g else None
        return replica("PyTorchJob", n, image="registry.example.com/ml/bert:1", resources=gpu)

    return job("PyTorchJob", name, {"Master": rep(1, 0), "Worker": rep(workers, gpus)}, namespace="research")


POLICIES = [
    training_policy(
        "vision-defaults",
        "vision",
        defaults={
            "runPolicy": {"ttlSecondsAfterFinished": 3600, "schedulingPolicy": {"queue": "vision"}},
            "labels": {"team": "vision"},
        },
    ),
    training_policy("vision-quota", "vision", limits={"maxTotalResources": {"nvidia.com/gpu": 32}}),
    training_policy("nlp-defaults", "nlp", defaults={"runPolicy": {"schedulingPolicy": {"queue": "nlp"}}}),
    training_policy(
        "nlp-quota", "nlp", limits={"maxTotalResources": {"nvidia.com/gpu": 16}}, enforcement="Warn"
    ),
]


@pytest.fixture
async def stack(devcluster: DevCluster, tmp_path: Path) -> AsyncIterator[tuple[KubeClient, PolicyWatcher]]:
    client = await KubeClient.connect(devcluster.kubeconfig_path)
    watcher: PolicyWatcher | None = None
    server: WebhookServer | None = None
    try:
        for crd in all_crds():
            await client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
        bundle = generate_bundle(["localhost"], ["127.0.0.1"])
        (tmp_path / "tls.crt").write_bytes(bundle.serving.cert_pem)
        (tmp_path / "tls.key").write_bytes(bundle.serving.key_pem)
        index = PolicyIndex()
        server = WebhookServer(
            cert_dir=str(tmp_path), host="127.0.0.1", port=0, policies=PolicyAdmission(index)
        )
        await server.start()
        mutating, validating = webhook_configurations(server.url, bundle.ca.cert_pem)
        await client.create(MUTATING_WEBHOOK_CONFIGURATIONS, mutating)
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, validating)
        await client.create(
            NAMESPACES,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "research", "labels": {"team": "vision"}},
            },
        )
        watcher = PolicyWatcher(client, index, job_resources=[PYTORCHJOBS])
        await asyncio.wait_for(watcher.start(), 10)
        yield client, watcher
    finally:
        if watcher is not None:
            await watcher.stop()
        if server is not None:
            await server.stop()
        await client.close()


async def test_team_defaults_and_limits_follow_namespace_labels(
    stack: tuple[KubeClient, PolicyWatcher],
) -> None:
    client, watcher = stack
    for obj in POLICIES:
        await client.create(TRAINING_POLICIES, obj)
    await eventually(
        lambda: len(watcher.index.policies()) == 4,
        what="the policies to reach the webhook's cache",
    )

    # Vision namespace: vision defaults are stored, the vision quota (Deny) applies.
    stored = await client.create(PYTORCHJOBS, ptjob("fits", workers=4), "research")
    assert stored["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "vision"
    assert stored["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 3600
    assert stored["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"  # built-in default kept
    assert stored["metadata"]["labels"]["team"] == "vision"
    with pytest.raises(ApiError) as refused:
        await client.create(PYTORCHJOBS, ptjob("too-big", workers=6), "research")
    assert refused.value.status == 403
    assert (
        'policy "vision-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 48 exceeds 32'
        in refused.value.message
    )

    # Relabel the namespace for the NLP team: no restart, the next request sees NLP's policies.
    await client.patch(NAMESPACES, None, "research", {"metadata": {"labels": {"team": "nlp"}}})
    await eventually(
        lambda: watcher.index.namespace_labels("research").get("team") == "nlp",
        what="the namespace relabel",
    )
    stored = await client.create(PYTORCHJOBS, ptjob("too-big", workers=6), "research")  # Warn only
    assert stored["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "nlp"
    assert "ttlSecondsAfterFinished" not in stored["spec"]["runPolicy"]
    assert "team" not in (stored["metadata"].get("labels") or {})


async def test_invalid_policy_is_refused_and_valid_ones_report_status(
    stack: tuple[KubeClient, PolicyWatcher],
) -> None:
    client, _watcher = stack
    bad = training_policy(
        "bad", "vision", limits={"maxReplicasPerJob": -1, "allowedImages": ["registry.example.com/[x"]}
    )
    with pytest.raises(ApiError) as refused:
        await client.create(TRAINING_POLICIES, bad)
    assert refused.value.status == 422
    assert 'TrainingPolicy "bad" is invalid' in refused.value.message
    assert "spec.limits.maxReplicasPerJob: Invalid: -1" in refused.value.message
    assert "spec.limits.allowedImages[0]" in refused.value.message

    await client.create(TRAINING_POLICIES, POLICIES[1])

    async def status_recorded() -> bool:
        obj = await client.get(TRAINING_POLICIES, None, "vision-quota")
        status = obj.get("status") or {}
        return (
            status.get("valid") is True and status.get("observedGeneration") == obj["metadata"]["generation"]
        )

    await eventually(status_recorded, what="the policy status")


def tenant_job(name: str, tenant: str, workers: int) -> Obj:
    obj = ptjob(name, workers=workers)
    obj["metadata"]["annotations"] = {"kubedl.io/tenancy": json.dumps({"tenant": tenant, "user": "bob"})}
    return obj


async def test_a_tenancy_quota_refuses_a_tenants_over_quota_job(
    stack: tuple[KubeClient, PolicyWatcher],
) -> None:
    client, watcher = stack
    quota = training_policy(
        "tenant-quota",
        "vision",
        jobSelector={"matchExpressions": [{"key": "tenancy.kubetrain.io/tenant", "operator": "Exists"}]},
        limits={"tenantQuota": {"maxJobs": 2, "maxTotalResources": {"nvidia.com/gpu": 24}}},
    )
    await client.create(TRAINING_POLICIES, quota)
    await eventually(lambda: len(watcher.index.policies()) == 1, what="the policy in the cache")
    first = await client.create(PYTORCHJOBS, tenant_job("a1", "team-a", workers=1), "research")
    assert first["metadata"]["labels"]["tenancy.kubetrain.io/tenant"] == "team-a"
    await eventually(
        lambda: len(watcher.index.tenant_jobs.of_tenant("team-a")) == 1,
        what="a1 seen",
    )
    await client.create(PYTORCHJOBS, tenant_job("a2", "team-a", workers=2), "research")  # 24 GPUs: fits
    await eventually(
        lambda: len(watcher.index.tenant_jobs.of_tenant("team-a")) == 2,
        what="a2 seen",
    )
    with pytest.raises(ApiError) as refused:
        await client.create(PYTORCHJOBS, tenant_job("a3", "team-a", workers=1), "research")
    assert refused.value.status == 403
    message = refused.value.message
    assert (
        'policy "tenant-quota": spec.limits.tenantQuota.maxJobs: tenant "team-a" would have 3 unfinished '
        "jobs (2 already), exceeds 2" in message
    )
    assert (
        'spec.limits.tenantQuota.maxTotalResources[nvidia.com/gpu]: tenant "team-a" would use 32 '
        "(24 in its other jobs), exceeds 24" in message
    )
    # Another tenant has a quota of its own.
    await client.create(PYTORCHJOBS, tenant_job("b1", "team-b", workers=3), "research")
    # A finished job no longer counts: a1 succeeds, a3 fits.
    await client.patch_status(
        PYTORCHJOBS,
        "research",
        "a1",
        {"status": {"conditions": [{"type": "Succeeded", "status": "True", "reason": "JobSucceeded"}]}},
    )
    await eventually(
        lambda: len(watcher.index.tenant_jobs.of_tenant("team-a")) == 1,
        what="a1 finished",
    )
    await client.create(PYTORCHJOBS, tenant_job("a3", "team-a", workers=1), "research")
