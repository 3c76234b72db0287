"""Two of Trainer 2.3's admission rules on devcluster, with the controller running the TrainJob:

- a runtime's `mlPolicy.torch.envInjection.targets[i].containerNames` never names `node`
  (Trainer's CRD rule and message, which the API server evaluates before the webhook);
- a TrainJob's `runtimePatches` do not change while its jobs are still active — the stored
  TrainJob's `status.jobsStatus[].active`, which the controller writes from the pods — even in
  the update that suspends it (Trainer's JobSet plug-in); once the controller has suspended it,
  the change is admitted and reaches the pods of the next run."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import TRAINER_API_GROUPS, Harness, eventually, refusal

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
NODE_MESSAGE = (
    "containerNames must not include the main node container because PET_* envs are always injected into it"
)


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


async def test_env_injection_never_names_the_node_container(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("inj")
    torch = await h.kube.get(CLUSTER_TRAINING_RUNTIMES, None, "torch-distributed")
    node_pod = torch["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node_pod["initContainers"] = [{"name": "preflight-check", "image": "busybox", "command": ["true"]}]
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "injected", "labels": torch["metadata"].get("labels") or {}},
        "spec": copy.deepcopy(torch["spec"]),
    }
    targets = runtime["spec"]["mlPolicy"]["torch"]["envInjection"] = {
        "targets": [{"jobName": "node", "containerNames": ["preflight-check", "node"]}]
    }
    message = await refusal(h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns))
    # the CRD's CEL rule, which the API server evaluates before calling the webhook
    assert message.endswith(
        f'"injected" is invalid: spec.mlPolicy.torch.envInjection.targets[0].containerNames: '
        f"Invalid value: {NODE_MESSAGE}"
    ), message
    cluster_wide = copy.deepcopy(runtime)
    cluster_wide["kind"] = "ClusterTrainingRuntime"
    cluster_wide["metadata"]["name"] = f"{ns}-injected"
    message = await refusal(h.kube.create(CLUSTER_TRAINING_RUNTIMES, cluster_wide))
    assert NODE_MESSAGE in message
    targets["targets"][0]["containerNames"] = ["preflight-check"]
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "inj"},
        "spec": {"runtimeRef": {"name": "injected", "kind": "TrainingRuntime"}, "trainer": {"numNodes": 1}},
    }
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    [pod] = await h.wait_pod_names(ns, "inj", ["inj-node-0-0"])
    [preflight] = pod["spec"]["initContainers"]
    assert {e["name"]: e.get("value") for e in preflight["env"]}["PET_NNODES"] == "1"


def patched_trainjob(name: str, team: str) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "command": ["torchrun", "train.py"]},
            "runtimePatches": [team_patch(team)],
        },
    }


def team_patch(team: str) -> Obj:
    """Kueue-like: a manager's patch labelling the node pods."""
    pod = {"metadata": {"labels": {"team": team}}}
    return {
        "manager": "kueue.x-k8s.io/manager",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod}}}]}
            }
        },
    }


async def test_runtime_patches_wait_until_no_job_is_active(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("act")
    await h.kube.create(TRAINJOBS, patched_trainjob("hold", "a"), namespace=ns)
    pods = await h.wait_pod_names(ns, "hold", ["hold-node-0-0", "hold-node-0-1"])
    assert {p["metadata"]["labels"]["team"] for p in pods} == {"a"}

    async def active() -> Obj | None:
        tj = await h.kube.get(TRAINJOBS, ns, "hold")
        node = [e for e in (tj.get("status") or {}).get("jobsStatus") or [] if e["name"] == "node"]
        return tj if node and node[0]["active"] == 1 else None

    await eventually(active, what="jobsStatus: the node job active")

    def suspend_and_patch(tj: Obj) -> None:
        tj["spec"]["suspend"] = True
        tj["spec"]["runtimePatches"] = [team_patch("b")]

    def suspend(tj: Obj) -> None:
        tj["spec"]["suspend"] = True

    # suspending and changing the patch in one request: the jobs are still active
    message = await refusal(h.change(TRAINJOBS, ns, "hold", suspend_and_patch))
    assert (
        "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's "
        "ReplicatedJob node is still active"
    ) in message
    assert "can only be modified when the TrainJob is suspended" not in message
    # suspend alone; the controller deletes the pods and writes the jobs inactive
    await h.change(TRAINJOBS, ns, "hold", suspend)

    async def suspended() -> Obj | None:
        tj = await h.kube.get(TRAINJOBS, ns, "hold")
        status = tj.get("status") or {}
        inactive = all(e["active"] == 0 for e in status.get("jobsStatus") or [])
        held = any(x["type"] == "Suspended" and x["status"] == "True" for x in status.get("conditions") or [])
        return tj if inactive and held else None

    await eventually(suspended, what="TrainJob hold Suspended, no job active")

    def patch_and_resume(tj: Obj) -> None:  # Kueue's admission: a new patch and resume at once
        tj["spec"]["runtimePatches"] = [team_patch("b")]
        tj["spec"]["suspend"] = False

    await h.change(TRAINJOBS, ns, "hold", patch_and_resume)

    async def relabelled() -> bool:
        now = [p for p in await h.pods(ns, "hold") if not p["metadata"].get("deletionTimestamp")]
        return len(now) == 2 and {p["metadata"]["labels"]["team"] for p in now} == {"b"}

    await eventually(relabelled, what="the next run's pods carry the new patch")
