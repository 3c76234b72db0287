"""Trainer's own example manifests (examples/yaml of Kubeflow Trainer, copied unchanged into
tests/data/trainer/examples) applied to devcluster as a user would apply them, each run to the
state Trainer's controller reaches on a cluster with no queueing or gang scheduler installed:
a TrainJob created suspended (the Kueue example) stays Suspended with no pods; every other one
runs its steps in order — initializers before the nodes they gate — and, once its pods
succeed, is Complete (`AllJobsCompleted`) with one `jobsStatus` entry per step."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import Harness, eventually, label_nodes, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "trainer" / "examples"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[Harness]:
    # DevStack installs Trainer's default ClusterTrainingRuntimes (torch-distributed among them).
    async for stack, h in open_stack(api_groups=("kubetrain.io", "trainer.kubeflow.org")):
        await label_nodes(stack, h, {"node-type": "training"})  # 02-runtime-patches' nodeSelector
        yield h


def documents(name: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


async def apply(h: Harness, ns: str, docs: list[Obj]) -> list[Obj]:
    """Create every document in the file's order; returns the TrainJobs."""
    refs = {
        "ClusterTrainingRuntime": CLUSTER_TRAINING_RUNTIMES,
        "TrainingRuntime": TRAINING_RUNTIMES,
        "TrainJob": TRAINJOBS,
    }
    for doc in docs:
        ref = refs[doc["kind"]]
        await h.kube.create(ref, doc, namespace=ns if ref.namespaced else None)
    return [d for d in docs if d["kind"] == "TrainJob"]


async def run_to_completion(h: Harness, ns: str, name: str) -> tuple[Obj, list[str]]:
    """Let every pod of the TrainJob succeed as it starts, until the TrainJob is Complete;
    returns it and the pods in the order they were finished."""
    finished: list[str] = []

    async def check() -> Obj | None:
        tj = await h.get(TRAINJOBS, ns, name)
        assert tj is not None
        conditions = (tj.get("status") or {}).get("conditions") or []
        assert not any(c["type"] == "Failed" and c["status"] == "True" for c in conditions), conditions
        if any(c["type"] == "Complete" and c["status"] == "True" for c in conditions):
            return tj
        for pod in await h.pods(ns, name):
            pod_name = pod["metadata"]["name"]
            if (pod.get("status") or {}).get("phase") == "Running" and pod_name not in finished:
                finished.append(pod_name)
                await h.sim.finish(ns, pod_name)
        return None

    tj: Obj = await eventually(check, what=f"TrainJob {ns}/{name} Complete")
    return tj, finished


def steps_of(tj: Obj) -> list[str]:
    return [s["name"] for s in tj["status"]["jobsStatus"]]


@pytest.mark.parametrize(
    ("example", "pods"),
    [
        ("01-multi-node.yaml", ["node"] * 3),
        ("04-volcano-integration.yaml", ["node"] * 4),
        ("05-multi-step.yaml", ["dataset-initializer", "node", "node"]),
    ],
)
async def test_an_example_trainjob_runs_to_complete(env: Harness, example: str, pods: list[str]) -> None:
    """01: torch-distributed on 3 nodes. 04: its own ClusterTrainingRuntime with a Volcano
    podGroupPolicy, which no gang scheduler here serves: the pods run ungated (docs/behaviour.md).
    05: a TrainingRuntime whose nodes wait for the dataset initializer to complete."""
    h = env
    ns = await h.namespace("example")
    (job,) = await apply(h, ns, documents(example))
    name = job["metadata"]["name"]
    tj, finished = await run_to_completion(h, ns, name)
    complete = tj["status"]["conditions"][-1]
    assert (complete["type"], complete["reason"]) == ("Complete", "AllJobsCompleted")
    assert [p.removeprefix(f"{name}-").rsplit("-", 2)[0] for p in finished] == pods
    assert all(s["succeeded"] == 1 and s["failed"] == 0 for s in tj["status"]["jobsStatus"])
    assert sorted(steps_of(tj)) == sorted(set(pods))


async def test_the_kueue_example_stays_suspended_without_kueue(env: Harness) -> None:
    """03: created `suspend: true` for Kueue to admit; with no Kueue it stays Suspended, no pods."""
    h = env
    ns = await h.namespace("kueue")
    (job,) = await apply(h, ns, documents("03-kueue-integration.yaml"))
    name = job["metadata"]["name"]

    async def suspended() -> Obj | None:
        tj = await h.get(TRAINJOBS, ns, name)
        assert tj is not None
        conditions = (tj.get("status") or {}).get("conditions") or []
        return tj if [(c["type"], c["status"]) for c in conditions] == [("Suspended", "True")] else None

    tj = await eventually(suspended, what=f"TrainJob {name} Suspended")
    assert tj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "training-queue"
    assert await h.pods(ns, name) == []


async def test_the_runtime_patches_example_reaches_the_node_pods(env: Harness) -> None:
    """02: the platform team's patch puts its service account, node selector and toleration on
    the `node` pods beside the TrainJob's env and resources; then it runs to Complete.
    (a simulated node is labelled `node-type: training`, which the pods' nodeSelector needs;
    devcluster admits a pod whose ServiceAccount does not exist, where a real cluster's pods
    wait for `training-sa`.)"""
    h = env
    ns = await h.namespace("patches")
    (job,) = await apply(h, ns, documents("02-runtime-patches.yaml"))
    name = job["metadata"]["name"]
    pods = await h.wait_pod_names(ns, name, [f"{name}-node-0-0", f"{name}-node-0-1"])
    for pod in pods:
        spec = pod["spec"]
        assert spec["serviceAccountName"] == "training-sa"
        assert spec["nodeSelector"] == {"node-type": "training"}
        toleration = {
            "key": "training-workload",
            "operator": "Equal",
            "value": "true",
            "effect": "NoSchedule",
        }
        assert toleration in spec["tolerations"]
        node = next(c for c in spec["containers"] if c["name"] == "node")
        env = {e["name"]: e.get("value") for e in node["env"]}
        assert env["CUSTOM_VAR"] == "custom-value" and env["PET_NNODES"] == "2"
        assert node["resources"]["limits"] == {"cpu": "4", "memory": "8Gi"}
    tj, finished = await run_to_completion(h, ns, name)
    assert sorted(finished) == sorted(p["metadata"]["name"] for p in pods)
    assert tj["status"]["conditions"][-1]["reason"] == "AllJobsCompleted"


async def test_the_interactive_flux_example_keeps_its_nodes_running(env: Harness) -> None:
    """flux/flux-interactive.yaml on flux/flux-runtime.yaml's ClusterTrainingRuntime: four
    `node` pods that sleep for a user to attach: they run, and the TrainJob has no condition
    (neither finished nor suspended) — as under Trainer, whose JobSet stays active."""
    h = env
    ns = await h.namespace("flux")
    await apply(h, ns, documents("flux/flux-runtime.yaml"))
    (job,) = await apply(h, ns, documents("flux/flux-interactive.yaml"))
    name = job["metadata"]["name"]
    pods = await h.wait_pods(ns, name, 4)
    assert sorted(p["metadata"]["name"] for p in pods) == [f"{name}-node-0-{i}" for i in range(4)]
    tj = await h.get(TRAINJOBS, ns, name)
    assert tj is not None
    assert not (tj.get("status") or {}).get("conditions")
