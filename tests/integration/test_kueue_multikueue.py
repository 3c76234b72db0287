"""MultiKueue (sigs.k8s.io/kueue jobframework and the integrations' multikueue adapters) played
against kubetrain on devcluster, for a `kubeflow.org/v1` PyTorchJob and a TrainJob. One cluster
stands for both: the manager cluster's job in one namespace, the worker cluster's copy in
another. What MultiKueue relies on:

- in the manager cluster a job Kueue's webhook defaulted to `managedBy: kueue.x-k8s.io/multikueue`
  and admitted (templates or runtime patch written, unsuspended) gets no pods and no status from
  kubetrain, and the status MultiKueue copies from the worker (`SyncJob`: a merge patch of the
  status subresource, of the fields Kueue's types read) is kept as written — kubetrain never
  writes that job;
- in the worker cluster the copy (`copySpec`, `managedBy` cleared, Kueue's prebuilt-workload and
  origin labels; for a TrainJob Kueue's runtime patch removed) runs with the scheduling
  directives the manager's admission wrote."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import TRAINJOBS, ResourceRef, job_resources_in

from .controller_support import (
    KUEUE_NODE_LABELS,
    TEST_USER_AGENT,
    Harness,
    eventually,
    is_true,
    job_manifest,
    label_nodes,
    open_stack,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
PYTORCHJOBS = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGER = "kueue.x-k8s.io/manager"
FLAVOR = {"cloud.example.com/flavor": "a"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for pair in open_stack(api_groups=("kubetrain.io", "kubeflow.org", "trainer.kubeflow.org")):
        await label_nodes(*pair, *KUEUE_NODE_LABELS)
        yield pair


def worker_copy(local: Obj) -> Obj:
    """copySpec + SetMultiKueueMeta + SetManagedBy(nil): a new object with the local one's
    labels, annotations and spec."""
    meta = local["metadata"]
    labels = {
        **(meta.get("labels") or {}),
        "kueue.x-k8s.io/prebuilt-workload-name": "job-q-7e8f9",
        "kueue.x-k8s.io/multikueue-origin": "manager",
    }
    spec = {**local["spec"]}
    return {
        "apiVersion": local["apiVersion"],
        "kind": local["kind"],
        "metadata": {"name": meta["name"], "labels": labels, "annotations": meta.get("annotations") or {}},
        "spec": spec,
    }


async def left_alone(h: Harness, ref: ResourceRef, ns: str, name: str, copied: Obj) -> None:
    """The manager's job still has exactly the status MultiKueue copied after kubetrain has seen
    a later change of it (Kueue's label write) and reconciled a job created after that."""
    await h.change(ref, ns, name, lambda j: j["metadata"].setdefault("labels", {}).update({"seen": "1"}))
    later = job_manifest("PyTorchJob", "later", {"Master": 1})
    later["apiVersion"] = "kubeflow.org/v1"
    await h.kube.create(PYTORCHJOBS, later, namespace=ns)
    await h.wait_pod_names(ns, "later", ["later-master-0"])
    stored = await h.get(ref, ns, name)
    assert stored is not None and stored["status"] == copied
    assert await h.pods(ns, name) == []
    writes = [
        r
        for r in h.requests.records
        if r.namespace == ns
        and r.name == name
        and r.verb in ("update", "patch")
        and not r.user_agent.startswith(TEST_USER_AGENT)
    ]
    assert writes == []


# training-operator v1.9.4's JobStatus and ReplicaStatus: what of the remote status Kueue's
# types read, and so copy (their integer fields are omitempty).
KUBEFLOW_STATUS = ("conditions", "replicaStatuses", "startTime", "completionTime", "lastReconcileTime")
KUBEFLOW_REPLICA_STATUS = ("active", "succeeded", "failed", "labelSelector", "selector")


def through_kubeflow_types(status: Obj) -> Obj:
    out = {k: v for k, v in status.items() if k in KUBEFLOW_STATUS}
    out["replicaStatuses"] = {
        rtype: {k: v for k, v in (rs or {}).items() if k in KUBEFLOW_REPLICA_STATUS and v not in (0, None)}
        for rtype, rs in (status.get("replicaStatuses") or {}).items()
    }
    return out


async def sync_status(h: Harness, ref: ResourceRef, ns: str, name: str, status: Obj) -> Obj:
    """SyncJob: the local job's status := the remote's as Kueue read it, a merge patch of /status."""
    patched = await h.kube.patch(ref, ns, name, {"status": status}, subresource="status")
    result: Obj = patched["status"]
    return result


async def test_a_multikueue_pytorchjob(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    manager_ns, worker_ns = await h.namespace("mkmgr"), await h.namespace("mkwrk")
    job = job_manifest(
        "PyTorchJob", "q", {"Master": 1, "Worker": 1}, run_policy={"suspend": True, "managedBy": MULTIKUEUE}
    )
    job["apiVersion"] = "kubeflow.org/v1"
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    await h.kube.create(PYTORCHJOBS, job, namespace=manager_ns)

    def admit(j: Obj) -> None:
        j["spec"]["runPolicy"]["suspend"] = False
        for rspec in j["spec"]["pytorchReplicaSpecs"].values():
            rspec["template"]["spec"]["nodeSelector"] = dict(FLAVOR)

    local = await h.change(PYTORCHJOBS, manager_ns, "q", admit)
    remote = worker_copy(local)
    del remote["spec"]["runPolicy"]["managedBy"]
    await h.kube.create(PYTORCHJOBS, remote, namespace=worker_ns)
    pods = await h.wait_pod_names(worker_ns, "q", ["q-master-0", "q-worker-0"])
    assert all(p["spec"]["nodeSelector"] == FLAVOR for p in pods)

    async def running() -> Obj | None:
        current = await h.get(PYTORCHJOBS, worker_ns, "q")
        return current if is_true(current, "Running") else None

    remote_job = await eventually(running, what="worker q Running")
    copied = await sync_status(h, PYTORCHJOBS, manager_ns, "q", through_kubeflow_types(remote_job["status"]))
    assert copied["replicaStatuses"]["Master"]["active"] == 1
    # kubetrain's own status fields do not reach the manager cluster (Kueue's types lack them):
    # its `kubectl get` Replicas and Active columns stay empty there
    assert "replicas" in remote_job["status"] and "replicas" not in copied and "active" not in copied
    assert any(c["type"] == "Running" and c["status"] == "True" for c in copied["conditions"])
    await left_alone(h, PYTORCHJOBS, manager_ns, "q", copied)


async def test_a_multikueue_trainjob(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    manager_ns, worker_ns = await h.namespace("mktmgr"), await h.namespace("mktwrk")
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "q", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "command": ["torchrun", "train.py"]},
            "suspend": True,
            "managedBy": MULTIKUEUE,
            "runtimePatches": [{"manager": MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}],
        },
    }
    await h.kube.create(TRAINJOBS, job, namespace=manager_ns)
    pod_patch = {"template": {"spec": {"template": {"spec": {"nodeSelector": dict(FLAVOR)}}}}}

    def patch_while_suspended(tj: Obj) -> None:
        tj["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"] = [
            {"name": "node", **pod_patch}
        ]

    await h.change(TRAINJOBS, manager_ns, "q", patch_while_suspended)
    local = await h.change(TRAINJOBS, manager_ns, "q", lambda tj: tj["spec"].update(suspend=False))
    remote = worker_copy(local)
    del remote["spec"]["managedBy"]
    remote["spec"]["runtimePatches"] = [
        p for p in remote["spec"]["runtimePatches"] if p["manager"] != MANAGER
    ]
    await h.kube.create(TRAINJOBS, remote, namespace=worker_ns)
    await h.wait_pod_names(worker_ns, "q", ["q-node-0-0", "q-node-0-1"])

    async def active() -> Obj | None:
        current = await h.get(TRAINJOBS, worker_ns, "q")
        status = (current or {}).get("status") or {}
        return current if any(s.get("active") for s in status.get("jobsStatus") or []) else None

    remote_tj = await eventually(active, what="worker q active")
    copied = await sync_status(
        h, TRAINJOBS, manager_ns, "q", remote_tj["status"]
    )  # Trainer 2.3's fields: all
    assert copied["jobsStatus"]
    await left_alone(h, TRAINJOBS, manager_ns, "q", copied)


async def test_the_manager_clusters_finished_job_goes_by_its_ttl(env: tuple[DevStack, Harness]) -> None:
    """JobSet issue 1310: the manager cluster's job is never run there, so only its TTL, read
    against the finished status MultiKueue copied, removes it (Kueue keeps the worker's copy
    until that status is synced)."""
    _, h = env
    ns = await h.namespace("mkttl")
    job = job_manifest(
        "PyTorchJob", "q", {"Master": 1}, run_policy={"managedBy": MULTIKUEUE, "ttlSecondsAfterFinished": 0}
    )
    job["apiVersion"] = "kubeflow.org/v1"
    await h.kube.create(PYTORCHJOBS, job, namespace=ns)
    running = {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "message": "created"},
            {"type": "Running", "status": "True", "reason": "PyTorchJobRunning", "message": "running"},
        ],
        "startTime": "2024-05-01T12:00:00Z",
    }
    copied = await sync_status(h, PYTORCHJOBS, ns, "q", running)
    await left_alone(h, PYTORCHJOBS, ns, "q", copied)
    succeeded = {
        "conditions": [
            {"type": "Running", "status": "False", "reason": "PyTorchJobSucceeded", "message": "done"},
            {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded", "message": "done"},
        ],
        "completionTime": "2024-05-01T12:10:00Z",
    }
    await sync_status(h, PYTORCHJOBS, ns, "q", succeeded)

    async def gone() -> bool | None:
        return True if await h.get(PYTORCHJOBS, ns, "q") is None else None

    await eventually(gone, what="the manager's finished q deleted by its TTL")
