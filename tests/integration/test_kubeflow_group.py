"""Serving kubeflow.org/v1 (`--api-groups kubetrain.io,kubeflow.org`) through the real webhooks and
controller against devcluster: Kubeflow manifests run unchanged with Kubeflow's pod labels,
`runPolicy.managedBy` decides who reconciles, Kueue's admission cycle (created suspended,
admitted with scheduling directives, preempted, admitted again) behaves as on Kubeflow's
operator, and the operator refuses a kubeflow.org CRD that it did not install."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.jobs.crdgen import all_crds
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, PODS, ResourceRef, job_resources_in
from kubetrain.operator.apigroups import ApiGroupRefused, check_api_groups

from .controller_support import Harness, eventually, is_true, job_manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
GROUPS = ("kubetrain.io", "kubeflow.org")
KF = job_resources_in(["kubeflow.org"])
PYTORCHJOBS = KF["PyTorchJob.kubeflow.org"]


STACK_OPTIONS = {"api_groups": GROUPS}


def kubeflow_job(name: str, replicas: dict[str, int], **kw: Any) -> Obj:
    job = job_manifest("PyTorchJob", name, replicas, **kw)
    job["apiVersion"] = "kubeflow.org/v1"
    return job


async def get(h: Harness, ref: ResourceRef, ns: str, name: str) -> Obj:
    obj = await h.get(ref, ns, name)
    assert obj is not None
    return obj


async def test_a_kubeflow_manifest_runs_unchanged_with_kubeflows_labels(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("kf")
    created = await h.kube.create(PYTORCHJOBS, kubeflow_job("ddp", {"Master": 1, "Worker": 1}), namespace=ns)
    assert created["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"  # the mutating webhook ran
    pods = await h.wait_pod_names(ns, "ddp", ["ddp-master-0", "ddp-worker-0"])
    master = pods[0]
    labels = master["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("training.kubeflow.org/")} == {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": "ddp",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }
    assert "training.kubeflow.org/job-role" not in pods[1]["metadata"]["labels"]
    (owner,) = master["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["name"]) == ("kubeflow.org/v1", "PyTorchJob", "ddp")
    # Kubeflow's SDK finds a job's pods by these labels.
    page = await h.kube.list(
        PODS,
        ns,
        label_selector="training.kubeflow.org/job-name=ddp,training.kubeflow.org/replica-type=master",
    )
    assert [p["metadata"]["name"] for p in page["items"]] == ["ddp-master-0"]
    await h.sim.finish(ns, "ddp-master-0")
    done = await h.wait_true(PYTORCHJOBS, ns, "ddp", "Succeeded")
    assert done["status"]["replicaStatuses"]["Master"]["succeeded"] == 1


async def test_managed_by_decides_who_reconciles(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kfmb")
    theirs = kubeflow_job("mk", {"Master": 1}, run_policy={"managedBy": "kueue.x-k8s.io/multikueue"})
    ours = kubeflow_job("to", {"Master": 1}, run_policy={"managedBy": "kubeflow.org/training-operator"})
    await h.kube.create(PYTORCHJOBS, theirs, namespace=ns)
    await h.kube.create(PYTORCHJOBS, ours, namespace=ns)
    await h.wait_pod_names(ns, "to", ["to-master-0"])
    await h.wait_true(PYTORCHJOBS, ns, "to", "Created")
    # The MultiKueue job: no pods, no status, however long we look (the other job went through).
    assert await h.pods(ns, "mk") == []
    assert not (await get(h, PYTORCHJOBS, ns, "mk")).get("status")


async def update(h: Harness, ns: str, name: str, change: Callable[[Obj], Obj]) -> Obj:
    """GET, change, PUT — again on a 409 (the controller's status writes move resourceVersion),
    as Kueue's client does."""
    for _ in range(20):
        try:
            result: Obj = await h.kube.replace(PYTORCHJOBS, change(await get(h, PYTORCHJOBS, ns, name)))
            return result
        except ApiError as err:
            if not err.is_conflict:
                raise
    raise AssertionError(f"{name}: still conflicting after 20 tries")


def admit(job: Obj, node_selector: dict[str, str], toleration: Obj, label: dict[str, str]) -> Obj:
    """What Kueue's jobframework does on admission: RunWithPodSetsInfo (nodeSelector,
    tolerations, labels on every replica template), then unsuspend — one update."""
    out = copy.deepcopy(job)
    for rspec in out["spec"]["pytorchReplicaSpecs"].values():
        template = rspec["template"]
        template.setdefault("metadata", {}).setdefault("labels", {}).update(label)
        template["spec"]["nodeSelector"] = {**(template["spec"].get("nodeSelector") or {}), **node_selector}
        template["spec"]["tolerations"] = [*(template["spec"].get("tolerations") or []), toleration]
    out["spec"]["runPolicy"]["suspend"] = False
    return out


def preempt(job: Obj, original: Obj) -> Obj:
    """Kueue's stop: suspend and RestorePodSetsInfo (the templates as before admission) — one update."""
    out = copy.deepcopy(job)
    for rtype, rspec in out["spec"]["pytorchReplicaSpecs"].items():
        rspec["template"] = copy.deepcopy(original["spec"]["pytorchReplicaSpecs"][rtype]["template"])
    out["spec"]["runPolicy"]["suspend"] = True
    return out


async def test_kueue_admission_preemption_and_readmission(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kueue")
    manifest = kubeflow_job("q", {"Master": 1, "Worker": 1}, run_policy={"suspend": True})
    manifest["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    original = await h.kube.create(PYTORCHJOBS, manifest, namespace=ns)
    await h.wait_true(PYTORCHJOBS, ns, "q", "Suspended")
    assert await h.pods(ns, "q") == []

    # Admitted to flavor "a": nodeSelector, tolerations and a label on every template, unsuspended.
    toleration = {"key": "flavor", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
    await update(h, ns, "q", lambda j: admit(j, {"flavor": "a"}, toleration, {"kueue.x-k8s.io/podset": "p"}))
    pods = await h.wait_pod_names(ns, "q", ["q-master-0", "q-worker-0"])
    for pod in pods:
        assert pod["spec"]["nodeSelector"] == {"flavor": "a"}
        assert toleration in pod["spec"]["tolerations"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "p"

    # The pods come before the status write that clears Suspended: wait for the status to follow.
    async def running_unsuspended() -> Obj | None:
        job = await h.get(PYTORCHJOBS, ns, "q")
        return job if is_true(job, "Created") and not is_true(job, "Suspended") else None

    await eventually(running_unsuspended, what="PyTorchJob q Created and no longer Suspended")

    # Preempted: suspended with the templates restored; the pods go, the job says Suspended.
    await update(h, ns, "q", lambda j: preempt(j, original))
    await h.wait_true(PYTORCHJOBS, ns, "q", "Suspended")

    async def no_pods() -> bool | None:
        live = [p for p in await h.pods(ns, "q") if not p["metadata"].get("deletionTimestamp")]
        return True if not live else None

    await eventually(no_pods, what="the preempted job's pods deleted")
    stored = await get(h, PYTORCHJOBS, ns, "q")
    assert "nodeSelector" not in stored["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]

    # Admitted again, to flavor "b": new pods with the new directives.
    toleration_b = {**toleration, "value": "b"}
    await update(h, ns, "q", lambda j: admit(j, {"flavor": "b"}, toleration_b, {}))

    async def readmitted() -> list[Obj] | None:
        live = [p for p in await h.pods(ns, "q") if not p["metadata"].get("deletionTimestamp")]
        return (
            live
            if len(live) == 2 and all(p["spec"]["nodeSelector"] == {"flavor": "b"} for p in live)
            else None
        )

    await eventually(readmitted, what="pods of the readmitted job on flavor b")


async def test_the_webhook_still_refuses_other_template_changes(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kfimm")
    await h.kube.create(
        PYTORCHJOBS, kubeflow_job("imm", {"Master": 1}, run_policy={"suspend": True}), namespace=ns
    )

    def new_image(job: Obj) -> Obj:
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"] = "other:1"
        return job

    with pytest.raises(ApiError) as refused:
        await update(h, ns, "imm", new_image)
    assert "spec.pytorchReplicaSpecs[Master].template" in str(refused.value)
    assert "immutable" in str(refused.value)


def _unlabelled(crd: Obj) -> Obj:
    out = copy.deepcopy(crd)
    out["metadata"].pop("labels", None)
    return out


@pytest.mark.asyncio(loop_scope="function")
async def test_refuses_to_serve_kubeflow_org_over_crds_it_did_not_install(kube: KubeClient) -> None:
    with pytest.raises(ApiGroupRefused, match=r"not installed; install them with `kubetrain crds --group"):
        await check_api_groups(kube, GROUPS)
    crds = all_crds("kubeflow.org")
    await kube.create(CUSTOM_RESOURCE_DEFINITIONS, _unlabelled(crds[1]))  # as Kubeflow's kustomize would
    for crd in [c for i, c in enumerate(crds) if i != 1]:  # every other kind: kubetrain's own
        await kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    with pytest.raises(ApiGroupRefused) as refused:
        await check_api_groups(kube, GROUPS)
    message = str(refused.value)
    assert "pytorchjobs.kubeflow.org exists and was not installed by kubetrain" in message
    assert "tfjobs.kubeflow.org" not in message and "Uninstall Kubeflow's training operator" in message
    await check_api_groups(kube, ("kubetrain.io",))  # kubetrain's own group is not checked
    current = await kube.get(CUSTOM_RESOURCE_DEFINITIONS, None, "pytorchjobs.kubeflow.org")
    await kube.replace(
        CUSTOM_RESOURCE_DEFINITIONS,
        {
            **crds[1],
            "metadata": {**crds[1]["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        },
    )
    await check_api_groups(kube, GROUPS)  # replaced by kubetrain's: served


@pytest.mark.asyncio(loop_scope="function")
async def test_refuses_an_mpijob_crd_from_before_it_served_v2beta1(kube: KubeClient) -> None:
    """mpijobs.kubeflow.org from an older kubetrain (v1 only, v2beta1's schema): the controller
    reconciles MPIJobs at v2beta1, so the start-up says to replace the CRD."""
    crds = all_crds("kubeflow.org")
    for crd in crds:
        if crd["spec"].get("conversion"):  # MPIJob: as older kubetrain generated it
            crd = copy.deepcopy(crd)
            del crd["spec"]["conversion"]
            crd["spec"]["versions"] = [{**crd["spec"]["versions"][0], "name": "v1"}]
        await kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    with pytest.raises(ApiGroupRefused) as refused:
        await check_api_groups(kube, GROUPS)
    message = str(refused.value)
    assert "mpijobs.kubeflow.org (serves v1; needs v1, v2beta1) is from an older kubetrain" in message
    assert "kubetrain crds --group kubeflow.org | kubectl replace -f -" in message
