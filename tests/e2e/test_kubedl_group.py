"""KubeDL's own example manifests (tests/data/kubedl) against `kubetrain run` serving
training.kubedl.io/v1alpha1 on the cluster $KUBECONFIG names, behind the chart's webhooks in URL
mode: each applies as it is — only its namespace is the test's, the operator being scoped to
one — is stored in KubeDL's layout, and runs to Succeeded; the manifests with fields kubetrain
does not run are refused by the webhook naming the field. With KubeDL's job annotations: code
sync puts its init container and shared volume in every replica, the TensorBoard pod and Service
are deleted after the TTL, and a TrainingPolicy tenancy quota refuses a tenant's over-quota job."""

from __future__ import annotations

import json
from typing import Any

import kubedl_examples
import pytest
from e2e import scenarios_support as support
from kubedl_examples import example_job

from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import PODS, SERVICES, TRAINING_POLICIES, job_resources_in

pytestmark = support.E2E
E2E_API_GROUPS = ("kubetrain.io", "training.kubedl.io")  # what the operator serves (the `cluster` fixture)

RUNNABLE = [name for name in kubedl_examples.RUNNABLE if name != kubedl_examples.HOST_PATH]
REFUSED = {
    "tf/tf_job_mnist_modelversion.yaml": "spec.modelVersion: Forbidden",
    "tf/tf_job_mnist_cache.yaml": "spec.cacheBackend: Forbidden",
}
REFS = {ref.kind: ref for ref in job_resources_in(["training.kubedl.io"]).values()}


def _true(job: dict[str, Any], ctype: str) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conditions)


@pytest.mark.parametrize("name", RUNNABLE)
async def test_kubedl_example_runs_to_succeeded(cluster: Any, name: str) -> None:
    job = example_job(name, cluster.namespace)
    ref = REFS[job["kind"]]
    created = await cluster.client.create(ref, job)
    assert created["apiVersion"] == "training.kubedl.io/v1alpha1"
    assert "runPolicy" not in created["spec"]  # defaults stored in KubeDL's layout
    job_name = created["metadata"]["name"]
    total = sum(
        r.get("replicas", 1)
        for k, r in created["spec"].items()
        if k.endswith("ReplicaSpecs")
        for r in r.values()
    )
    pods = await cluster.wait_pods(job_name, total, running=False)
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["group-name"] == "training.kubedl.io" and labels["job-name"] == job_name
    await cluster.finish_pods(job_name, total)

    async def done() -> dict[str, Any] | None:
        got = await cluster.client.get(ref, cluster.namespace, job_name)
        assert not _true(got, "Failed"), got.get("status")
        return got if _true(got, "Succeeded") else None

    await support.eventually(done, within=120, what=f"{job['kind']} {job_name} to succeed")


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_unsupported_kubedl_fields_are_refused(cluster: Any, name: str) -> None:
    job = example_job(name, cluster.namespace)
    job["metadata"]["name"] += "-refused"
    with pytest.raises(ApiError) as refused:
        await cluster.client.create(REFS[job["kind"]], job)
    assert REFUSED[name] in refused.value.message


def with_annotation(job: dict[str, Any], suffix: str, key: str, value: dict[str, Any]) -> dict[str, Any]:
    job["metadata"]["name"] += suffix
    job["metadata"].setdefault("annotations", {})[key] = json.dumps(value)
    return job


async def test_code_sync_puts_the_fetch_and_the_shared_volume_in_every_replica(cluster: Any) -> None:
    config = {"source": "https://github.com/kubedl-io/examples.git", "branch": "main"}
    job = with_annotation(
        example_job("tf/tf_job_mnist_distributed_simple.yaml", cluster.namespace),
        "-sync",
        "kubedl.io/git-sync-config",
        config,
    )
    created = await cluster.client.create(REFS["TFJob"], job)
    name = created["metadata"]["name"]
    try:
        pods = await cluster.wait_pods(name, 3, running=False)
        for pod in pods:
            spec = pod["spec"]
            assert spec["initContainers"][0]["name"] == "git-sync-code"
            assert {"name": "git-sync", "emptyDir": {}} in spec["volumes"]
            for container in spec["containers"]:
                assert {"name": "git-sync", "mountPath": "/code"} in container["volumeMounts"]
    finally:
        await support.delete_quietly(cluster.client, REFS["TFJob"], cluster.namespace, name)


async def test_tensorboard_pod_and_service_are_gone_after_the_ttl(cluster: Any) -> None:
    config = {"logDir": "/train/logs", "ttlSecondsAfterJobFinished": 3}
    job = with_annotation(
        example_job("tf/tf_job_mnist.yaml", cluster.namespace), "-tb", "kubedl.io/tensorboard-config", config
    )
    created = await cluster.client.create(REFS["TFJob"], job)
    name, ns = created["metadata"]["name"], cluster.namespace
    board, service = f"{name}-tensorboard-0", f"{name}-tensorboard"

    async def present(ref: Any, obj_name: str) -> dict[str, Any] | None:
        try:
            got: dict[str, Any] = await cluster.client.get(ref, ns, obj_name)
            return got
        except ApiError as err:
            if err.is_not_found:
                return None
            raise

    await support.eventually(lambda: present(PODS, board), within=60, what="the TensorBoard pod")
    svc = await support.eventually(lambda: present(SERVICES, service), within=60, what="its Service")
    assert svc["spec"]["ports"][0]["port"] == 6006
    if cluster.simulator is not None:  # real kubelets: the worker exits by itself
        await cluster.wait_pods(name, 2, running=True)
        await cluster.simulator.finish(ns, f"{name}-worker-0")

    async def gone() -> bool:
        got = await cluster.client.get(REFS["TFJob"], ns, name)
        return (
            _true(got, "Succeeded")
            and await present(PODS, board) is None
            and await present(SERVICES, service) is None
        )

    await support.eventually(gone, within=120, what="the TensorBoard pod and Service deleted after the TTL")
    await support.delete_quietly(cluster.client, REFS["TFJob"], ns, name)


async def test_a_tenancy_quota_refuses_the_tenants_over_quota_job(cluster: Any) -> None:
    ns = cluster.namespace
    policy: dict[str, Any] = {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TrainingPolicy",
        "metadata": {"name": f"{ns}-tenant-quota"},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "limits": {"tenantQuota": {"maxJobs": 1}},
        },
    }
    await cluster.client.create(TRAINING_POLICIES, policy)
    tenancy = {"tenant": "vision", "user": "alice"}
    first = with_annotation(example_job("tf/tf_job_mnist.yaml", ns), "-t1", "kubedl.io/tenancy", tenancy)
    second = with_annotation(example_job("tf/tf_job_mnist.yaml", ns), "-t2", "kubedl.io/tenancy", tenancy)
    try:
        created = await cluster.client.create(REFS["TFJob"], first)
        assert created["metadata"]["labels"]["tenancy.kubetrain.io/tenant"] == "vision"

        async def refused() -> str | None:
            path = REFS["TFJob"].path(ns)
            try:
                await cluster.client.request("create", "POST", path, query={"dryRun": "All"}, body=second)
            except ApiError as err:
                return err.message if err.status == 403 else None
            return None  # the webhook's caches have not seen the policy or the first job yet

        message = await support.eventually(refused, within=60, what="the over-quota job refused")
        assert (
            f'policy "{ns}-tenant-quota": spec.limits.tenantQuota.maxJobs: tenant "vision" would have 2 '
            "unfinished jobs (1 already), exceeds 1"
        ) in message
    finally:
        await support.delete_quietly(cluster.client, REFS["TFJob"], ns, first["metadata"]["name"])
        await support.delete_quietly(cluster.client, TRAINING_POLICIES, None, policy["metadata"]["name"])
