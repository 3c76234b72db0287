"""Kueue's Kubeflow integration (sigs.k8s.io/kueue pkg/controller/jobs/kubeflow/kubeflowjob and
jobframework) played against a `kubeflow.org/v1` PyTorchJob on devcluster with the real webhooks
and controller. The test makes Kueue's writes exactly as its code does and asserts what Kueue's
reads of the job's API object need to see:

- `RunWithPodSetsInfo` with topology-aware scheduling: labels, annotations, nodeSelector,
  tolerations and the `kueue.x-k8s.io/topology` scheduling gate on every replica template and
  `runPolicy.suspend: false`, in one update; the pods keep the gate until Kueue's
  TopologyUngater lifts it (a merge patch that also adds the topology nodeSelector), and each
  carries the pod index label Kueue's `PodSets` names (`training.kubeflow.org/replica-index`),
  a unique index below the replica count;
- `PodsReady` (`Running=True`) is false while a pod is gated and true once all run;
- `Stop` (suspend and `RestorePodSetsInfo` in one update): what `IsActive` reads —
  every `replicaStatuses[*].active` — goes to 0, `Running` is no longer true, and stays so;
- `Finished`: `Succeeded=True` with its message after a readmission;
- `PriorityClass`: `runPolicy.schedulingPolicy.priorityClass` is kept as written;
- `PodLabelSelector` (`job-name` and the kind's `operator-name`, which `kueuectl list pods` uses)
  selects exactly the job's pods.

Kueue writes through Kubeflow's Go types, which lack kubetrain's `runPolicy.podFailurePolicy`:
its admission and eviction updates leave the job's failure rules in force.

The same cycle (gate, indexes, Running, eviction) for the TFJob, XGBoostJob, PaddleJob and JAXJob
integrations and for the MPIJob one (kubeflow.org/v2beta1, mpi-operator's labels)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.kube.resources import PODS, ResourceRef, job_resources_in

from .controller_support import (
    KUEUE_NODE_LABELS,
    Harness,
    eventually,
    is_true,
    job_manifest,
    label_nodes,
    open_stack,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
KF = job_resources_in(["kubeflow.org"])
PYTORCHJOBS = KF["PyTorchJob.kubeflow.org"]
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"  # kueue.TopologySchedulingGate
POD_INDEX_LABEL = "training.kubeflow.org/replica-index"  # kftraining.ReplicaIndexLabel
ORDER = ("Master", "Worker")  # PyTorchJob's OrderedReplicaTypes


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for pair in open_stack(api_groups=("kubetrain.io", "kubeflow.org")):
        await label_nodes(*pair, *KUEUE_NODE_LABELS)
        yield pair


def pod_set_info(podset: str, flavor: str, *, tas: bool) -> Obj:
    """podset.FromAssignment plus the reconciler's additions: the flavor's node labels and
    taint toleration, the podset label, the workload annotation; with a topology assignment the
    unconstrained-topology annotation and the topology scheduling gate."""
    info: Obj = {
        "labels": {"kueue.x-k8s.io/podset": podset},
        "annotations": {"kueue.x-k8s.io/workload": "pytorchjob-q-1a2b3"},
        "nodeSelector": {"cloud.example.com/flavor": flavor},
        "tolerations": [{"key": "flavor", "operator": "Equal", "value": flavor, "effect": "NoSchedule"}],
        "schedulingGates": [],
    }
    if tas:
        info["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] = "true"
        info["schedulingGates"] = [{"name": TOPOLOGY_GATE}]
    return info


def run_with_pod_sets_info(job: Obj, infos: dict[str, Obj]) -> None:
    """KubeflowJob.RunWithPodSetsInfo: podset.Merge into each replica template, then unsuspend."""
    job["spec"]["runPolicy"]["suspend"] = False
    for rtype, info in infos.items():
        template = job["spec"][replica_field(job["kind"])][rtype]["template"]
        meta = template.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), **info["labels"]}
        meta["annotations"] = {**(meta.get("annotations") or {}), **info["annotations"]}
        spec = template["spec"]
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **info["nodeSelector"]}
        spec["tolerations"] = [*(spec.get("tolerations") or []), *info["tolerations"]]
        if info["schedulingGates"]:
            spec["schedulingGates"] = [*(spec.get("schedulingGates") or []), *info["schedulingGates"]]


def stop(job: Obj, original: Obj) -> None:
    """The generic reconciler's stop: Suspend and RestorePodSetsInfo (podset.RestorePodSpec puts
    back the labels, annotations, nodeSelector, tolerations and gates Kueue saw at creation)."""
    job["spec"]["runPolicy"]["suspend"] = True
    field = replica_field(job["kind"])
    for rtype in original["spec"][field]:
        before = original["spec"][field][rtype]["template"]
        template = job["spec"][field][rtype]["template"]
        template["metadata"] = copy.deepcopy(before.get("metadata") or {})
        for key in ("nodeSelector", "tolerations", "schedulingGates"):
            template["spec"].pop(key, None)
            if key in before["spec"]:
                template["spec"][key] = copy.deepcopy(before["spec"][key])


def controller_of(pod: Obj) -> tuple[str, str, str]:
    """metav1.GetControllerOf: Kueue matches its apiVersion and kind exactly against its enabled
    integrations (ownerReferenceMatchingGVK)."""
    (owner,) = [o for o in pod["metadata"].get("ownerReferences") or [] if o.get("controller")]
    return owner["apiVersion"], owner["kind"], owner["name"]


def replica_field(kind: str) -> str:
    return FRAMEWORKS[kind].replica_field


def is_active(job: Obj) -> bool:
    """KubeflowJob.IsActive."""
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    return any((s or {}).get("active", 0) != 0 for s in statuses.values())


async def running_and_active(h: Harness, ref: ResourceRef, ns: str, kind: str) -> None:
    """Wait until job `q` is Running with a replica active."""

    async def running() -> Obj | None:
        current = await h.get(ref, ns, "q")
        return current if is_true(current, "Running") and is_active(current) else None

    await eventually(running, what=f"{kind} q Running=True")


async def evict_and_wait(h: Harness, ref: ResourceRef, ns: str, original: Obj, kind: str) -> Obj:
    """Kueue's eviction of job `q`: suspend and restore in one update (`stop`); the job once it is
    Suspended with no replica active."""
    await h.change(ref, ns, "q", lambda j: stop(j, original))

    async def stopped() -> Obj | None:
        current = await h.get(ref, ns, "q")
        return current if current and is_true(current, "Suspended") and not is_active(current) else None

    job: Obj = await eventually(stopped, what=f"{kind} q Suspended with no replica active")
    return job


async def selected(h: Harness, ns: str, selector: str) -> list[str]:
    """The pods of a job's PodLabelSelector (what `kueuectl list pods --for` lists)."""
    page = await h.kube.list(PODS, ns, label_selector=selector)
    return sorted(p["metadata"]["name"] for p in page["items"])


def live(pods: list[Obj]) -> list[Obj]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


async def test_kueues_tas_admission_eviction_and_finish(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kqkf")
    manifest = job_manifest(
        "PyTorchJob",
        "q",
        {"Master": 1, "Worker": 2},
        run_policy={"suspend": True, "schedulingPolicy": {"priorityClass": "high"}},
    )
    manifest["apiVersion"] = "kubeflow.org/v1"
    manifest["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    original = await h.kube.create(PYTORCHJOBS, manifest, namespace=ns)
    assert original["spec"]["runPolicy"]["schedulingPolicy"]["priorityClass"] == "high"

    infos = {rtype: pod_set_info(rtype.lower(), "a", tas=True) for rtype in ORDER}
    admitted = await h.change(PYTORCHJOBS, ns, "q", lambda j: run_with_pod_sets_info(j, infos))
    # Stored as Kueue wrote it: a template changed by admission would no longer match Kueue's
    # Workload (EquivalentToWorkload), which Kueue then recreates.
    expected = copy.deepcopy(original)
    run_with_pod_sets_info(expected, infos)
    assert admitted["spec"] == expected["spec"]
    pods = await h.wait_pod_names(ns, "q", ["q-master-0", "q-worker-0", "q-worker-1"])
    by_type: dict[str, list[int]] = {}
    for pod in pods:
        meta, spec = pod["metadata"], pod["spec"]
        rtype = meta["labels"]["training.kubeflow.org/replica-type"]
        assert meta["labels"]["kueue.x-k8s.io/podset"] == rtype
        assert meta["annotations"]["kueue.x-k8s.io/workload"] == "pytorchjob-q-1a2b3"
        assert meta["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"
        assert spec["nodeSelector"] == {"cloud.example.com/flavor": "a"}
        assert spec["schedulingGates"] == [{"name": TOPOLOGY_GATE}]
        by_type.setdefault(rtype, []).append(int(meta["labels"][POD_INDEX_LABEL]))
    # ReadUIntFromLabelBelowBound: one unique index per pod, below the podset's count
    assert {k: sorted(v) for k, v in by_type.items()} == {"master": [0], "worker": [0, 1]}
    selector = "training.kubeflow.org/job-name=q,training.kubeflow.org/operator-name=pytorchjob-controller"
    assert await selected(h, ns, selector) == ["q-master-0", "q-worker-0", "q-worker-1"]

    # Gated: nothing binds them, and PodsReady stays false however long the gate stays.
    await h.sim.wait_for_phase(ns, "q-master-0", "Pending")
    job = await h.get(PYTORCHJOBS, ns, "q")
    assert job is not None and not is_true(job, "Running")
    assert all(not p["spec"].get("nodeName") for p in await h.pods(ns, "q"))

    # The TopologyUngater: a merge patch per pod dropping the gate and adding the domain's labels.
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    for name in uids:
        patch = {"spec": {"schedulingGates": None, "nodeSelector": {"topology.example.com/block": "b1"}}}
        await h.kube.patch(PODS, ns, name, patch)
    for name in uids:
        await h.sim.wait_for_phase(ns, name, "Running")

    async def pods_ready() -> Obj | None:
        current = await h.get(PYTORCHJOBS, ns, "q")
        return current if is_true(current, "Running") else None

    await eventually(pods_ready, what="PodsReady: PyTorchJob q Running=True")
    for pod in await h.pods(ns, "q"):  # the same pods, lifted by Kueue, not recreated
        assert pod["metadata"]["uid"] == uids[pod["metadata"]["name"]]
        assert pod["spec"]["nodeSelector"] == {
            "cloud.example.com/flavor": "a",
            "topology.example.com/block": "b1",
        }
        assert not pod["spec"].get("schedulingGates")

    suspended = await evict_and_wait(h, PYTORCHJOBS, ns, original, "PyTorchJob")
    assert not is_true(suspended, "Running")
    for rtype in ORDER:
        restored = suspended["spec"]["pytorchReplicaSpecs"][rtype]["template"]
        assert restored["spec"] == original["spec"]["pytorchReplicaSpecs"][rtype]["template"]["spec"]
        assert not (restored.get("metadata") or {}).get("labels")

    async def no_pods() -> bool | None:
        return True if not live(await h.pods(ns, "q")) else None

    await eventually(no_pods, what="the evicted job's pods deleted")
    after = await h.get(PYTORCHJOBS, ns, "q")
    assert after is not None and not is_active(after) and not is_true(after, "Running")

    # Admitted again without a topology assignment; it runs to the end.
    plain = {rtype: pod_set_info(rtype.lower(), "b", tas=False) for rtype in ORDER}
    await h.change(PYTORCHJOBS, ns, "q", lambda j: run_with_pod_sets_info(j, plain))

    async def rerun() -> list[Obj] | None:
        now = live(await h.pods(ns, "q"))
        fresh = [p for p in now if p["metadata"]["uid"] not in uids.values()]
        return fresh if len(fresh) == 3 and len(now) == 3 else None

    for pod in await eventually(rerun, what="the readmitted job's pods"):
        assert pod["spec"]["nodeSelector"] == {"cloud.example.com/flavor": "b"}
        assert not pod["spec"].get("schedulingGates")
    for name in uids:
        await h.sim.wait_for_phase(ns, name, "Running")
    await h.sim.finish(ns, "q-master-0")

    async def finished() -> Obj | None:
        current = await h.get(PYTORCHJOBS, ns, "q")
        return current if is_true(current, "Succeeded") else None

    final = await eventually(finished, what="PyTorchJob q Succeeded")
    (succeeded,) = [c for c in final["status"]["conditions"] if c["type"] == "Succeeded"]
    assert succeeded["message"]  # Finished returns it as the workload's finish message
    assert not is_true(final, "Failed") and not is_true(final, "Running")


# Kueue's other Kubeflow integrations (tfjob, xgboostjob, paddlejob, jaxjob): the same
# KubeflowJob code over each kind's replica types.
KINDS = {
    "TFJob": {"Chief": 1, "Worker": 2},
    "XGBoostJob": {"Master": 1, "Worker": 2},
    "PaddleJob": {"Master": 1, "Worker": 2},
    "JAXJob": {"Worker": 3},
}


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_each_kind_keeps_kueues_gate_indexes_its_pods_and_zeroes_active_on_eviction(
    env: tuple[DevStack, Harness], kind: str
) -> None:
    _, h = env
    ref = KF[f"{kind}.kubeflow.org"]
    ns = await h.namespace(f"kq{kind.lower()}")
    manifest = job_manifest(kind, "q", KINDS[kind], run_policy={"suspend": True})
    manifest["apiVersion"] = "kubeflow.org/v1"
    original = await h.kube.create(ref, manifest, namespace=ns)
    infos = {rtype: pod_set_info(rtype.lower(), "a", tas=True) for rtype in KINDS[kind]}
    await h.change(ref, ns, "q", lambda j: run_with_pod_sets_info(j, infos))
    names = [f"q-{rtype.lower()}-{i}" for rtype, n in KINDS[kind].items() for i in range(n)]
    pods = await h.wait_pod_names(ns, "q", sorted(names))
    by_type: dict[str, list[int]] = {}
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert pod["spec"]["schedulingGates"] == [{"name": TOPOLOGY_GATE}]
        by_type.setdefault(labels["kueue.x-k8s.io/podset"], []).append(int(labels[POD_INDEX_LABEL]))
        assert controller_of(pod) == ("kubeflow.org/v1", kind, "q")
    assert {k: sorted(v) for k, v in by_type.items()} == {
        rtype.lower(): list(range(n)) for rtype, n in KINDS[kind].items()
    }
    selector = (
        f"training.kubeflow.org/job-name=q,training.kubeflow.org/operator-name={kind.lower()}-controller"
    )
    assert await selected(h, ns, selector) == sorted(names)
    assert not is_true(await h.get(ref, ns, "q"), "Running")
    for name in names:
        patch = {"spec": {"schedulingGates": None, "nodeSelector": {"topology.example.com/block": "b1"}}}
        await h.kube.patch(PODS, ns, name, patch)

    await running_and_active(h, ref, ns, kind)
    evicted = await evict_and_wait(h, ref, ns, original, kind)
    assert not is_true(evicted, "Running")


async def test_an_mpijob_v2beta1_keeps_kueues_gate_and_indexes_its_workers(
    env: tuple[DevStack, Harness],
) -> None:
    """Kueue's mpijob integration writes kubeflow.org/v2beta1. mpi-operator labels Worker `i`
    `replica-index: i` and the Launcher none (without runLauncherAsWorker): Kueue's ungater
    places the Launcher podset without ranks, as on mpi-operator."""
    _, h = env
    ref = ResourceRef("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", True)
    ns = await h.namespace("kqmpi")
    template = {"spec": {"containers": [{"name": "main", "image": "mpi-image"}]}}
    manifest = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "q", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"suspend": True},
            "mpiReplicaSpecs": {
                "Launcher": {"template": copy.deepcopy(template)},
                "Worker": {"replicas": 2, "template": copy.deepcopy(template)},
            },
        },
    }
    original = await h.kube.create(ref, manifest, namespace=ns)
    infos = {rtype: pod_set_info(rtype.lower(), "a", tas=True) for rtype in ("Launcher", "Worker")}
    await h.change(ref, ns, "q", lambda j: run_with_pod_sets_info(j, infos))

    async def three_pods() -> list[Obj] | None:
        pods = live(await h.pods(ns, "q"))
        return pods if len(pods) == 3 else None

    pods = await eventually(three_pods, what="the MPIJob's Launcher and Workers")
    by_type: dict[str, list[str | None]] = {}
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert pod["spec"]["schedulingGates"] == [{"name": TOPOLOGY_GATE}]
        by_type.setdefault(labels["kueue.x-k8s.io/podset"], []).append(labels.get(POD_INDEX_LABEL))
    assert by_type["launcher"] == [None]
    for pod in pods:  # IsOwnerManagedByKueueForObject: Kueue's pod webhook leaves these pods alone
        assert controller_of(pod) == ("kubeflow.org/v2beta1", "MPIJob", "q")
    selector = "training.kubeflow.org/job-name=q,training.kubeflow.org/operator-name=mpi-operator"
    assert await selected(h, ns, selector) == sorted(p["metadata"]["name"] for p in pods)
    assert sorted(by_type["worker"], key=str) == ["0", "1"]
    assert not is_true(await h.get(ref, ns, "q"), "Running")
    for pod in pods:
        patch = {"spec": {"schedulingGates": None, "nodeSelector": {"topology.example.com/block": "b1"}}}
        await h.kube.patch(PODS, ns, pod["metadata"]["name"], patch)

    await running_and_active(h, ref, ns, "MPIJob")
    evicted = await evict_and_wait(h, ref, ns, original, "MPIJob")
    assert not is_true(evicted, "Running")


def as_kueues_types_write(job: Obj) -> None:
    """Kueue reads and writes a job through its Go types (training-operator v1.9.4's, mpi-operator
    v0.8.2's): a field they lack is not in what Kueue sends back."""
    job["spec"]["runPolicy"].pop("podFailurePolicy", None)


async def test_kueues_writes_keep_the_failure_rules(env: tuple[DevStack, Harness]) -> None:
    """`runPolicy.podFailurePolicy` is kubetrain's; Kueue's admission and eviction updates omit
    it. The rules the job was created with still decide its failures afterwards."""
    _, h = env
    ns = await h.namespace("kqpfp")
    rules = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}]}
    manifest = job_manifest(
        "PyTorchJob", "q", {"Master": 1}, run_policy={"suspend": True, "podFailurePolicy": rules}
    )
    manifest["apiVersion"] = "kubeflow.org/v1"
    original = await h.kube.create(PYTORCHJOBS, manifest, namespace=ns)
    infos = {"Master": pod_set_info("master", "a", tas=False)}

    def admit(j: Obj) -> None:
        as_kueues_types_write(j)
        run_with_pod_sets_info(j, infos)

    def evict(j: Obj) -> None:
        as_kueues_types_write(j)
        stop(j, original)

    admitted = await h.change(PYTORCHJOBS, ns, "q", admit)
    assert (
        admitted["spec"]["runPolicy"]["podFailurePolicy"] == original["spec"]["runPolicy"]["podFailurePolicy"]
    )
    await h.wait_pod_names(ns, "q", ["q-master-0"])
    evicted = await h.change(PYTORCHJOBS, ns, "q", evict)
    assert (
        evicted["spec"]["runPolicy"]["podFailurePolicy"] == original["spec"]["runPolicy"]["podFailurePolicy"]
    )
    await h.change(PYTORCHJOBS, ns, "q", admit)

    async def rerun() -> Obj | None:
        pods = live(await h.pods(ns, "q"))
        return pods[0] if len(pods) == 1 and (pods[0].get("status") or {}).get("phase") == "Running" else None

    await eventually(rerun, what="the readmitted job's pod running")
    await h.sim.finish(ns, "q-master-0", exit_code=3)

    async def failed() -> Obj | None:
        current = await h.get(PYTORCHJOBS, ns, "q")
        return current if is_true(current, "Failed") else None

    final = await eventually(failed, what="PyTorchJob q Failed by its FailJob rule")
    (cond,) = [c for c in final["status"]["conditions"] if c["type"] == "Failed"]
    assert cond["reason"] == "PodFailurePolicy"
