"""Kueue's TrainJob integration (sigs.k8s.io/kueue pkg/controller/jobs/trainjob) played against a
TrainJob of the `torch-distributed` runtime on devcluster with the real webhooks and controller.
The test makes Kueue's writes as its code does and asserts what its reads need to see:

- Kueue's mutating webhook: `suspend: true` and an empty runtime patch of manager
  `kueue.x-k8s.io/manager` appended on create — admitted;
- `RunWithPodSetsInfo`: that patch's `replicatedJobs` get the pod template's labels, annotations,
  nodeSelector, tolerations and the topology scheduling gate, written while still suspended,
  then `suspend: false` in a second update; the pods carry them, keep the gate until Kueue's
  TopologyUngater lifts it, and carry the labels Kueue's JobSet podsets read for topology-aware
  scheduling (`batch.kubernetes.io/job-completion-index` below the job's pod count,
  `jobset.sigs.k8s.io/job-index` below the replicated job's replicas);
- `PodsReady`: the replicated jobs' replicas equal `jobsStatus[].ready + succeeded` exactly when
  every pod runs;
- `Stop`: suspend; `IsActive` (`jobsStatus[].active`) goes to 0; then the patch's
  `replicatedJobs` removed (RestorePodSetsInfo) — admitted;
- readmission, `Finished` (`Complete=True`) and `ReclaimablePods` (`jobsStatus[].succeeded`);
- a multi-step TrainJob (an initializer, then the nodes): one podset per replicated job, PodsReady
  once the initializer's job succeeded and the node job is ready."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import PODS, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import KUEUE_NODE_LABELS, Harness, eventually, is_true, label_nodes, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
MANAGER = "kueue.x-k8s.io/manager"  # runtimePatchManagerName
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
NAMES = ["q-node-0-0", "q-node-0-1"]
MULTI_STEP = Path(__file__).resolve().parents[1] / "data" / "trainer" / "examples" / "05-multi-step.yaml"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for pair in open_stack(api_groups=("kubetrain.io", "trainer.kubeflow.org")):
        await label_nodes(*pair, *KUEUE_NODE_LABELS)
        yield pair


def as_kueues_webhook_leaves_it(name: str) -> Obj:
    """TrainJobWebhook.Default: suspended (the job has a queue) and Kueue's empty runtime patch."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "command": ["torchrun", "train.py"]},
            "suspend": True,
            "runtimePatches": [{"manager": MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}],
        },
    }


def kueue_patch(tj: Obj) -> Obj:
    (patch,) = [p for p in tj["spec"]["runtimePatches"] if p["manager"] == MANAGER]
    result: Obj = patch
    return result


def run_with_pod_sets_info(flavor: str, *, tas: bool) -> Any:
    """TrainJob.RunWithPodSetsInfo's first write: one ReplicatedJobPatch per podset (the
    runtime's one replicated job, `node`) in Kueue's patch; the job stays suspended."""
    annotations = {"kueue.x-k8s.io/workload": "trainjob-q-4c5d6"}
    if tas:
        annotations["kueue.x-k8s.io/podset-unconstrained-topology"] = "true"
    pod_spec: Obj = {
        "nodeSelector": {"cloud.example.com/flavor": flavor},
        "tolerations": [{"key": "flavor", "operator": "Equal", "value": flavor, "effect": "NoSchedule"}],
    }
    if tas:
        pod_spec["schedulingGates"] = [{"name": TOPOLOGY_GATE}]
    template = {
        "metadata": {"annotations": annotations, "labels": {"kueue.x-k8s.io/podset": "node"}},
        "spec": pod_spec,
    }

    def edit(tj: Obj) -> None:
        kueue_patch(tj)["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"] = [
            {"name": "node", "template": {"spec": {"template": template}}}
        ]

    return edit


def without_time(patch: Obj) -> Obj:
    return {k: v for k, v in patch.items() if k != "time"}


def unsuspend(tj: Obj) -> None:
    tj["spec"]["suspend"] = False


def suspend(tj: Obj) -> None:
    tj["spec"]["suspend"] = True


def jobs_status(tj: Obj | None) -> list[Obj]:
    return list(((tj or {}).get("status") or {}).get("jobsStatus") or [])


def pods_ready(tj: Obj | None) -> bool:
    """TrainJob.PodsReady: the JobSet's replicated jobs' replicas (`node`: 1) against the ready
    and succeeded jobs of jobsStatus."""
    return bool(sum(s.get("ready", 0) + s.get("succeeded", 0) for s in jobs_status(tj)) == 1)


def is_active(tj: Obj | None) -> bool:
    return any(s.get("active", 0) > 0 for s in jobs_status(tj))


def live(pods: list[Obj]) -> list[Obj]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


async def test_kueues_trainjob_admission_eviction_and_finish(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kqtj")
    created = await h.kube.create(TRAINJOBS, as_kueues_webhook_leaves_it("q"), namespace=ns)
    assert kueue_patch(created)["trainingRuntimeSpec"] == {"template": {"spec": {}}}

    written = await h.change(TRAINJOBS, ns, "q", run_with_pod_sets_info("a", tas=True))
    expected = copy.deepcopy(created)
    run_with_pod_sets_info("a", tas=True)(expected)
    # stored as Kueue wrote it (Trainer's `time` of a changed patch aside), else its Workload no
    # longer matches the TrainJob's podsets
    assert without_time(kueue_patch(written)) == without_time(kueue_patch(expected))
    assert await h.pods(ns, "q") == []  # still suspended
    await h.change(TRAINJOBS, ns, "q", unsuspend)
    pods = await h.wait_pod_names(ns, "q", NAMES)
    indexes = []
    for pod in pods:
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["labels"]["kueue.x-k8s.io/podset"] == "node"
        assert meta["annotations"]["kueue.x-k8s.io/workload"] == "trainjob-q-4c5d6"
        assert meta["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"
        assert spec["nodeSelector"] == {"cloud.example.com/flavor": "a"}
        assert {"key": "flavor", "operator": "Equal", "value": "a", "effect": "NoSchedule"} in spec[
            "tolerations"
        ]
        assert spec["schedulingGates"] == [{"name": TOPOLOGY_GATE}]
        assert meta["labels"]["jobset.sigs.k8s.io/job-index"] == "0"  # below replicas (1)
        # IsOwnerManagedByKueueForObject: the controller reference is the TrainJob, exactly
        (owner,) = [o for o in meta["ownerReferences"] if o.get("controller")]
        assert (owner["apiVersion"], owner["kind"], owner["name"]) == (
            "trainer.kubeflow.org/v1alpha1",
            "TrainJob",
            "q",
        )
        indexes.append(int(meta["labels"]["batch.kubernetes.io/job-completion-index"]))
    assert sorted(indexes) == [0, 1]  # one per pod, below the job's pod count (numNodes)
    # PodLabelSelector (what `kueuectl list pods --for trainjob/q` lists)
    page = await h.kube.list(PODS, ns, label_selector="jobset.sigs.k8s.io/jobset-name=q")
    assert sorted(p["metadata"]["name"] for p in page["items"]) == NAMES

    await h.sim.wait_for_phase(ns, NAMES[0], "Pending")
    tj = await h.get(TRAINJOBS, ns, "q")
    assert not pods_ready(tj)

    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    for name in NAMES:  # the TopologyUngater
        patch = {"spec": {"schedulingGates": None, "nodeSelector": {"topology.example.com/block": "b1"}}}
        await h.kube.patch(PODS, ns, name, patch)

    async def ready() -> Obj | None:
        current = await h.get(TRAINJOBS, ns, "q")
        return current if pods_ready(current) and is_active(current) else None

    await eventually(ready, what="TrainJob q PodsReady as Kueue computes it")
    for pod in await h.pods(ns, "q"):
        assert pod["metadata"]["uid"] == uids[pod["metadata"]["name"]]
        assert pod["status"]["phase"] == "Running"

    # Stop: suspend; once no job is active, RestorePodSetsInfo drops the patch's replicatedJobs.
    await h.change(TRAINJOBS, ns, "q", suspend)

    async def inactive() -> Obj | None:
        current = await h.get(TRAINJOBS, ns, "q")
        return current if current and jobs_status(current) and not is_active(current) else None

    await eventually(inactive, what="TrainJob q: no job active after the suspension")
    tj = await h.get(TRAINJOBS, ns, "q")
    assert tj is not None and not pods_ready(tj)
    restored = [
        p
        if p["manager"] != MANAGER
        else {"manager": MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}
        for p in tj["spec"]["runtimePatches"]
    ]
    await h.kube.patch(TRAINJOBS, ns, "q", {"spec": {"runtimePatches": restored}})

    async def no_pods() -> bool | None:
        return True if not live(await h.pods(ns, "q")) else None

    await eventually(no_pods, what="the evicted TrainJob's pods deleted")

    # Readmitted to flavor b without a topology assignment; it runs to the end.
    await h.change(TRAINJOBS, ns, "q", run_with_pod_sets_info("b", tas=False))
    await h.change(TRAINJOBS, ns, "q", unsuspend)

    async def rerun() -> list[Obj] | None:
        now = live(await h.pods(ns, "q"))
        fresh = [p for p in now if p["metadata"]["uid"] not in uids.values()]
        return fresh if len(fresh) == 2 and len(now) == 2 else None

    for pod in await eventually(rerun, what="the readmitted TrainJob's pods"):
        assert pod["spec"]["nodeSelector"] == {"cloud.example.com/flavor": "b"}
        assert not pod["spec"].get("schedulingGates")
    for name in NAMES:
        await h.sim.wait_for_phase(ns, name, "Running")
        await h.sim.finish(ns, name)

    async def finished() -> Obj | None:
        current = await h.get(TRAINJOBS, ns, "q")
        return current if is_true(current, "Complete") else None

    final = await eventually(finished, what="TrainJob q Complete")
    assert not is_true(final, "Failed")
    (node,) = [s for s in jobs_status(final) if s["name"] == "node"]
    # ReclaimablePods: succeeded jobs (1, not above replicas) times pods per job (2)
    assert node["succeeded"] == 1 and node["active"] == 0


async def test_a_multi_step_trainjob_is_ready_once_its_initializer_succeeded_and_nodes_run(
    env: tuple[DevStack, Harness],
) -> None:
    """Trainer's multi-step example admitted by Kueue: one podset per replicated job
    (`dataset-initializer`, `node`); PodsReady counts the initializer's job once it succeeded,
    and ReclaimablePods finds it succeeded (its pod's quota given back)."""
    _, h = env
    ns = await h.namespace("kqstep")
    runtime, job = [d for d in yaml.safe_load_all(MULTI_STEP.read_text()) if d]
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    job["spec"]["suspend"] = True
    job["spec"]["runtimePatches"] = [{"manager": MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}]
    name = job["metadata"]["name"]
    await h.kube.create(TRAINJOBS, job, namespace=ns)

    def admit(tj: Obj) -> None:
        kueue_patch(tj)["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"] = [
            {"name": step, "template": {"spec": {"template": {"spec": {"nodeSelector": {"flavor": "a"}}}}}}
            for step in ("dataset-initializer", "node")
        ]

    await h.change(TRAINJOBS, ns, name, admit)
    await h.change(TRAINJOBS, ns, name, unsuspend)
    init = f"{name}-dataset-initializer-0-0"
    [pod] = await h.wait_pod_names(ns, name, [init])
    assert pod["spec"]["nodeSelector"] == {"flavor": "a"}
    await h.sim.wait_for_phase(ns, init, "Running")

    def counts(tj: Obj | None) -> dict[str, tuple[int, int]]:
        return {s["name"]: (s.get("ready", 0), s.get("succeeded", 0)) for s in jobs_status(tj)}

    async def initializer_ready() -> Obj | None:
        tj = await h.get(TRAINJOBS, ns, name)
        return tj if counts(tj).get("dataset-initializer") == (1, 0) else None

    tj = await eventually(initializer_ready, what="the initializer's job ready")
    assert sum(r + s for r, s in counts(tj).values()) == 1  # of 2 replicated jobs: not PodsReady
    await h.sim.finish(ns, init)
    nodes = [f"{name}-node-0-0", f"{name}-node-0-1"]
    await h.wait_pod_names(ns, name, [init, *nodes])
    for node in nodes:
        await h.sim.wait_for_phase(ns, node, "Running")

    async def ready() -> Obj | None:
        tj = await h.get(TRAINJOBS, ns, name)
        return tj if counts(tj) == {"dataset-initializer": (0, 1), "node": (1, 0)} else None

    await eventually(ready, what="PodsReady: the initializer succeeded, the node job ready")
