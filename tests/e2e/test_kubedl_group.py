"""KubeDL's own example manifests (tests/data/kubedl) against `kubetrain run` serving
training.kubedl.io/v1alpha1 on the cluster $KUBECONFIG names, behind the chart's webhooks in URL
mode: each applies as it is — only its namespace is the test's, the operator being scoped to
one — is stored in KubeDL's layout, and runs to Succeeded; the manifests with fields kubetrain
does not run are refused by the webhook naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e import scenarios_support as support

from kubetrain.api.manifests import load_all
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import job_resources_in

pytestmark = support.E2E
E2E_API_GROUPS = ("kubetrain.io", "training.kubedl.io")  # what the operator serves (the `cluster` fixture)

DATA = Path(__file__).resolve().parents[1] / "data" / "kubedl" / "example"
RUNNABLE = [
    "tf/tf_job_mnist.yaml",
    "tf/tf_job_mnist_distributed_simple.yaml",
    "pytorch/pytorch_job_mnist_mpi.yaml",
    "xgboost/xgboostjob_v1alpha1_iris_train.yaml",
]
REFUSED = {
    "tf/tf_job_mnist_modelversion.yaml": "spec.modelVersion: Forbidden",
    "tf/tf_job_mnist_cache.yaml": "spec.cacheBackend: Forbidden",
}
REFS = {ref.kind: ref for ref in job_resources_in(["training.kubedl.io"]).values()}


def job_of(name: str, namespace: str) -> dict[str, Any]:
    (job,) = [d for d in load_all((DATA / name).read_text()) if str(d.get("kind", "")).endswith("Job")]
    job["metadata"]["namespace"] = namespace
    return job


def _true(job: dict[str, Any], ctype: str) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conditions)


@pytest.mark.parametrize("name", RUNNABLE)
async def test_kubedl_example_runs_to_succeeded(cluster: Any, name: str) -> None:
    job = job_of(name, cluster.namespace)
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
    job = job_of(name, cluster.namespace)
    job["metadata"]["name"] += "-refused"
    with pytest.raises(ApiError) as refused:
        await cluster.client.create(REFS[job["kind"]], job)
    assert REFUSED[name] in refused.value.message
