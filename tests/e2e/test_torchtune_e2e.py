"""A torchtune TrainJob (examples/trainer/trainjob-torchtune.yaml, Trainer's `torchtune-llama3.2-1b`
ClusterTrainingRuntime) against `kubetrain run` serving trainer.kubeflow.org on the cluster
$KUBECONFIG names, behind the chart's webhooks in URL mode.

Only what holds on devcluster and on a real kube-apiserver with no StorageClass (the PVC stays
Pending, so kube-scheduler never places a pod that mounts it) is asserted: the TrainJob is
admitted; the PVC `initializer-<tj>` exists with the runtime template's accessModes and storage
request, JobSet's `jobset.sigs.k8s.io/jobset-name` label and the TrainJob as controller owner; both
initializer pods exist and mount it by `persistentVolumeClaim.claimName`, none created before it
(`metadata.creationTimestamp`, whole seconds: ≤); deleting the TrainJob has the garbage collector
delete the PVC. The node pod is never waited for (it starts after the initializers Complete, which
they cannot without a bound PVC). An invalid torchtune TrainJob is refused at admission naming its
fields. Every object is read by its name or its TrainJob's label, never by listing a namespace
(real clusters add objects of their own, e.g. the `kube-root-ca.crt` ConfigMap)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml
from e2e import scenarios_support as support

from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    TRAINJOBS,
)

pytestmark = support.E2E
E2E_API_GROUPS = ("kubetrain.io", "trainer.kubeflow.org")  # what the operator serves (the `cluster` fixture)

Obj = dict[str, Any]
EXAMPLE = support.ROOT / "examples" / "trainer" / "trainjob-torchtune.yaml"
RUNTIME_NAME = "torchtune-llama3.2-1b"
CLAIM = "initializer"  # the runtime's volumeClaimPolicies template
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
INITIALIZERS = ("dataset-initializer", "model-initializer")


@pytest_asyncio.fixture(scope="module", loop_scope="module", autouse=True)
async def runtimes(cluster: Any) -> AsyncIterator[Obj]:
    """Trainer's default runtimes, torchtune's among them, created where missing (removed again
    after); yields the torchtune runtime as the cluster has it."""
    async with support.default_runtimes_installed(cluster.client):
        yield await cluster.client.get(CLUSTER_TRAINING_RUNTIMES, None, RUNTIME_NAME)


def example(namespace: str, name: str) -> Obj:
    """The example TrainJob, renamed into the scenario's namespace."""
    manifest: Obj = yaml.safe_load(EXAMPLE.read_text())
    manifest["metadata"] = {"name": name, "namespace": namespace}
    return manifest


def claim_volumes(pod: Obj) -> list[Obj]:
    return [v for v in pod["spec"].get("volumes") or [] if v.get("name") == CLAIM]


async def test_a_torchtune_trainjob_gets_its_pvc_before_its_initializer_pods(
    cluster: Any, runtimes: Obj
) -> None:
    name = "tune"
    tj = await cluster.client.create(TRAINJOBS, example(cluster.namespace, name))  # admitted
    assert tj["spec"]["runtimeRef"]["name"] == RUNTIME_NAME
    pvc_name = f"{CLAIM}-{name}"

    async def initializer_pods() -> list[Obj] | None:
        pods = [await support.read(cluster, PODS, f"{name}-{step}-0-0") for step in INITIALIZERS]
        return [p for p in pods if p is not None] if all(pods) else None

    pods = await support.eventually(initializer_pods, within=90, what=f"{name}'s two initializer pods")
    pvc = await support.read(cluster, PERSISTENT_VOLUME_CLAIMS, pvc_name)
    assert pvc is not None, f"PersistentVolumeClaim {pvc_name} missing while {name}'s pods exist"
    [policy] = runtimes["spec"]["template"]["spec"]["volumeClaimPolicies"]
    [template] = policy["templates"]
    assert pvc["spec"]["accessModes"] == template["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert pvc["spec"]["resources"]["requests"]["storage"] == "20Gi"
    assert pvc["spec"]["resources"]["requests"] == template["spec"]["resources"]["requests"]
    assert pvc["metadata"]["labels"][JOBSET_NAME] == name
    [owner] = pvc["metadata"]["ownerReferences"]
    assert owner["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert (owner["kind"], owner["name"], owner["uid"], owner.get("controller")) == (
        "TrainJob",
        name,
        tj["metadata"]["uid"],
        True,
    )
    # The same claim by the TrainJob's label: exactly one PVC is the TrainJob's.
    page = await cluster.client.list(
        PERSISTENT_VOLUME_CLAIMS, cluster.namespace, label_selector=f"{JOBSET_NAME}={name}"
    )
    assert [p["metadata"]["name"] for p in page.get("items", [])] == [pvc_name]
    for pod in pods:
        assert claim_volumes(pod) == [{"name": CLAIM, "persistentVolumeClaim": {"claimName": pvc_name}}]
        mounts = [m for c in pod["spec"]["containers"] for m in c.get("volumeMounts") or []]
        assert {"name": CLAIM, "mountPath": "/workspace"} in [
            {k: m[k] for k in ("name", "mountPath")} for m in mounts
        ]
        # creationTimestamp has whole-second resolution: "no later than", not "before".
        assert support.created_at(pvc) <= support.created_at(pod), (pvc["metadata"], pod["metadata"])

    await cluster.client.delete(TRAINJOBS, cluster.namespace, name, propagation_policy="Background")
    # The garbage collector deletes the owned PVC: on a real cluster its kubernetes.io/pvc-protection
    # finalizer keeps it while a pod using it exists, and the TrainJob's pods are collected too. The
    # collector learns of the TrainJob CRD (which this module may just have created) only through
    # its periodic discovery: hence the long wait.
    await support.eventually(
        lambda: _gone(cluster, pvc_name), within=120, what=f"PersistentVolumeClaim {pvc_name} collected"
    )


async def _gone(cluster: Any, pvc_name: str) -> bool:
    return await support.read(cluster, PERSISTENT_VOLUME_CLAIMS, pvc_name) is None


async def test_an_invalid_torchtune_trainjob_is_refused_naming_its_fields(cluster: Any) -> None:
    bad = example(cluster.namespace, "tune-bad")
    bad["spec"]["trainer"]["numNodes"] = 2  # the 1B model is single-node in Trainer
    bad["spec"]["trainer"]["args"] = ["epochs=1", "output_dir=/mine"]  # the runtime's to set
    with pytest.raises(ApiError) as refused:
        await cluster.client.create(TRAINJOBS, bad)
    error = refused.value
    assert error.status in (400, 422), error
    assert "denied the request" in error.message, error  # by the webhook, not the CRD schema
    assert "spec.trainer.numNodes" in error.message and "llama3_2/1B" in error.message, error
    assert "spec.trainer.args[1]" in error.message and "output_dir" in error.message, error
    assert await support.read(cluster, TRAINJOBS, "tune-bad") is None
