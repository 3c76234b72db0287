"""A TrainJob of Trainer's torchtune runtime (volumeClaimPolicies: the `initializer` PVC shared by
the initializers and the nodes) runs on devcluster — which, like kube-apiserver, refuses a pod
mounting a volume it does not have: the PVC `initializer-<tj>` is created (template spec,
JobSet's label, the TrainJob as owner) before the first pod, once; every pod of the three steps
has the volume; Delete → garbage-collected with the TrainJob, Retain → no owner, it stays; a
refused PVC create is a `PVCCreationFailed` event, no pod, then success on the retry; admission
refuses an invalid policy with its field path."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from trainjobs import torchtune_runtime

from kubetrain.kube.resources import (
    PERSISTENT_VOLUME_CLAIMS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
)

from .controller_support import CONTROLLER_USER_AGENT, Harness, eventually, open_stack, refusal

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
RUNTIME: Obj = torchtune_runtime()
STEPS = ("dataset-initializer", "model-initializer", "node")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[Harness]:
    async for _stack, h in open_stack(api_groups=("kubetrain.io", "trainer.kubeflow.org")):
        # The stack installs Trainer's default runtimes, torchtune-llama3.2-1b among them.
        yield h


def trainjob(name: str, runtime: str = "torchtune-llama3.2-1b", kind: str | None = None) -> Obj:
    ref = {"name": runtime, **({"kind": kind} if kind else {})}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": ref},
    }


def namespaced(name: str, when_deleted: str | None = None) -> Obj:
    runtime = copy.deepcopy(RUNTIME)
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": name, "labels": runtime["metadata"]["labels"]}
    if when_deleted is not None:
        runtime["spec"]["template"]["spec"]["volumeClaimPolicies"][0]["retentionPolicy"] = {
            "whenDeleted": when_deleted
        }
    return runtime


def operator_writes(h: Harness, ns: str) -> list[str]:
    """The resources of the operator's creates in `ns`, in the order the API server received them."""
    return [
        r.resource
        for r in h.requests.records
        if r.namespace == ns and r.verb == "create" and r.user_agent.startswith(CONTROLLER_USER_AGENT)
    ]


def claim_volume(pod: Obj) -> Obj | None:
    return next((v for v in pod["spec"].get("volumes") or [] if v["name"] == "initializer"), None)


async def test_a_torchtune_trainjob_gets_its_pvc_first_and_every_pod_mounts_it(env: Harness) -> None:
    h = env
    ns = await h.namespace("tune")
    tj = await h.kube.create(TRAINJOBS, trainjob("tune"), namespace=ns)
    initializers = ["tune-dataset-initializer-0-0", "tune-model-initializer-0-0"]
    await h.wait_pod_names(ns, "tune", initializers)
    pvc = await h.get(PERSISTENT_VOLUME_CLAIMS, ns, "initializer-tune")
    assert pvc is not None
    template = RUNTIME["spec"]["template"]["spec"]["volumeClaimPolicies"][0]["templates"][0]
    assert pvc["spec"]["accessModes"] == template["spec"]["accessModes"]
    assert pvc["spec"]["resources"] == template["spec"]["resources"]
    assert pvc["status"]["phase"] == "Pending"
    assert pvc["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "tune"
    [owner] = pvc["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "TrainJob",
        "tune",
        tj["metadata"]["uid"],
        True,
    )
    for name in initializers:
        await h.sim.finish(ns, name)
    await h.wait_pod_names(ns, "tune", [*initializers, "tune-node-0-0"])
    for pod in await h.pods(ns, "tune"):
        assert claim_volume(pod) == {
            "name": "initializer",
            "persistentVolumeClaim": {"claimName": "initializer-tune"},
        }
    writes = operator_writes(h, ns)
    assert writes.index("persistentvolumeclaims") < writes.index("pods")
    await h.sim.finish(ns, "tune-node-0-0")
    await eventually(lambda: _complete(h, ns, "tune"), what="TrainJob tune Complete")
    # Created once: no write for it while the TrainJob ran.
    assert operator_writes(h, ns).count("persistentvolumeclaims") == 1
    await h.kube.delete(TRAINJOBS, ns, "tune")
    await eventually(lambda: h.absent(PERSISTENT_VOLUME_CLAIMS, ns, "initializer-tune"), what="PVC collected")


async def _complete(h: Harness, ns: str, name: str) -> bool:
    job = await h.get(TRAINJOBS, ns, name) or {}
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)


async def test_retain_leaves_the_pvc_without_owner_after_the_trainjob_is_deleted(env: Harness) -> None:
    h = env
    ns = await h.namespace("keep")
    await h.kube.create(TRAINING_RUNTIMES, namespaced("kept", "Retain"), namespace=ns)
    await h.kube.create(TRAINJOBS, trainjob("keep", "kept", "TrainingRuntime"), namespace=ns)
    await h.wait_pods(ns, "keep", 2)
    pvc = await h.get(PERSISTENT_VOLUME_CLAIMS, ns, "initializer-keep")
    assert pvc is not None and "ownerReferences" not in pvc["metadata"]
    await h.kube.delete(TRAINJOBS, ns, "keep")
    await eventually(lambda: h._none_left(ns, "keep"), what="the TrainJob's pods collected")
    await h.stack.cluster.settle()  # the garbage collector has nothing left to do
    assert await h.get(PERSISTENT_VOLUME_CLAIMS, ns, "initializer-keep") is not None


async def test_a_refused_pvc_create_is_an_event_and_no_pod_until_the_retry_succeeds(env: Harness) -> None:
    h = env
    ns = await h.namespace("quota")
    quota = "exceeded quota: storage, requested: requests.storage=20Gi, used: 0, limited: 10Gi"
    rule = h.faults.fail(
        verb="create", resource="persistentvolumeclaims", namespace=ns, status=403, message=quota
    )
    await h.kube.create(TRAINJOBS, trainjob("quota"), namespace=ns)
    event = await h.wait_event(ns, "quota", "PVCCreationFailed")
    assert event["type"] == "Warning"
    assert "initializer-quota" in event["message"] and "exceeded quota" in event["message"]
    await h.wait_pods(ns, "quota", 2)  # the retry created it, then the pods
    assert rule.fired == 1
    writes = operator_writes(h, ns)
    claims = [i for i, resource in enumerate(writes) if resource == "persistentvolumeclaims"]
    assert len(claims) == 2 and claims[1] < writes.index("pods")  # refused, then created — before any pod
    assert await h.get(PERSISTENT_VOLUME_CLAIMS, ns, "initializer-quota") is not None


async def test_a_pvc_of_the_name_still_being_deleted_is_waited_for_not_mounted(env: Harness) -> None:
    """Deleting a TrainJob and creating it again at once: its PVC is still being deleted (a real
    cluster's pvc-protection finalizer holds it while the old pods stop). The new TrainJob's pods
    must not mount it; they wait, and the PVC is created anew once the old one is gone."""
    h = env
    ns = await h.namespace("again")
    held = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "initializer-again", "finalizers": ["example.com/hold"]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    await h.kube.create(PERSISTENT_VOLUME_CLAIMS, held, namespace=ns)
    await h.kube.delete(PERSISTENT_VOLUME_CLAIMS, ns, "initializer-again")  # terminating
    tj = await h.kube.create(TRAINJOBS, trainjob("again"), namespace=ns)
    event = await h.wait_event(ns, "again", "PVCCreationFailed")
    assert "initializer-again already exists and it is being deleted" in event["message"]
    assert await h.pods(ns, "again") == []
    old = await h.get(PERSISTENT_VOLUME_CLAIMS, ns, "initializer-again")
    assert old is not None
    old["metadata"]["finalizers"] = []
    await h.kube.replace(PERSISTENT_VOLUME_CLAIMS, old)  # the old PVC goes
    await h.wait_pods(ns, "again", 2)
    pvc = await h.get(PERSISTENT_VOLUME_CLAIMS, ns, "initializer-again")
    assert pvc is not None and pvc["metadata"]["ownerReferences"][0]["uid"] == tj["metadata"]["uid"]
    assert "deletionTimestamp" not in pvc["metadata"]


async def test_admission_refuses_invalid_policies_with_the_field_path(env: Harness) -> None:
    h = env
    ns = await h.namespace("bad")
    base = "spec.template.spec.volumeClaimPolicies[0]"
    unmounted = namespaced("unmounted")
    for rjob in unmounted["spec"]["template"]["spec"]["replicatedJobs"]:
        del rjob["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    message = await refusal(h.kube.create(TRAINING_RUNTIMES, unmounted, namespace=ns))
    assert "spec.template.spec.replicatedJobs" in message and 'volumeMount named "initializer"' in message
    retention = namespaced("keep-it", "Keep")
    message = await refusal(h.kube.create(TRAINING_RUNTIMES, retention, namespace=ns))
    assert f"{base}.retentionPolicy.whenDeleted" in message and '"Retain"' in message
    elsewhere = namespaced("elsewhere")
    elsewhere["spec"]["template"]["spec"]["volumeClaimPolicies"][0]["templates"][0]["metadata"][
        "namespace"
    ] = "x"
    message = await refusal(h.kube.create(TRAINING_RUNTIMES, elsewhere, namespace=ns))
    assert f"{base}.templates[0].metadata.namespace" in message
    clash = namespaced("clash")
    clash["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]["template"]["spec"][
        "volumes"
    ] = [{"name": "initializer", "emptyDir": {}}]
    message = await refusal(h.kube.create(TRAINING_RUNTIMES, clash, namespace=ns))
    assert "spec.template.spec.replicatedJobs[2].template.spec.template.spec.volumes[0].name" in message
    long_name = "t" * 52  # initializer-<52> is 64 characters
    message = await refusal(h.kube.create(TRAINJOBS, trainjob(long_name), namespace=ns))
    assert "metadata.name" in message and f"initializer-{long_name}" in message
