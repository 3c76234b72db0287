"""A gang-scheduled TrainJob whose nodes wait for an initializer runs to the end, through the
webhook and the controller against devcluster with its Volcano and coscheduling simulators
(docs/behaviour.md §11). The PodGroup counted the initializer's pod too, so the first step's pod
waited for a gang only the nodes made after it could complete, and the TrainJob never started;
now the initializer runs alone and the nodes are the gang. DeepSpeed's launcher, made once the
nodes are Ready, joins their gang uncounted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    SCHEDULER_PLUGINS_PODGROUPS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    VOLCANO_PODGROUPS,
    ResourceRef,
)

from .controller_support import eventually, running_stack
from .test_trainjob_controller import training_runtime, trainjob, wait_condition

pytestmark = pytest.mark.asyncio

WARMUP = "warmup"
DEEPSPEED = Path(__file__).resolve().parents[1] / "data/trainer/runtimes/deepspeed_distributed.yaml"


def initializer_runtime(policy: dict[str, object]) -> dict[str, object]:
    """Trainer's torch runtime with a one-pod step the nodes wait for (`Complete`), as they wait
    for the dataset and model initializers, under the podGroupPolicy `policy`."""
    runtime = training_runtime("gang-init")
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    first = {
        "name": WARMUP,
        "template": {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": WARMUP, "image": "busybox", "command": ["true"]}],
                        "restartPolicy": "OnFailure",
                    }
                }
            }
        },
    }
    rjobs.insert(0, first)
    rjobs[1]["dependsOn"] = [{"name": WARMUP, "status": "Complete"}]
    runtime["spec"]["podGroupPolicy"] = policy
    return runtime


@pytest.mark.parametrize(
    ("gang", "policy", "groups"),
    [
        ("volcano", {"volcano": {}}, VOLCANO_PODGROUPS),
        ("scheduler-plugins", {"coscheduling": {}}, SCHEDULER_PLUGINS_PODGROUPS),
    ],
)
async def test_the_nodes_are_the_gang_and_the_trainjob_completes(
    gang: str, policy: dict[str, object], groups: ResourceRef
) -> None:
    groups_on = ("kubetrain.io", "trainer.kubeflow.org")
    async with running_stack(api_groups=groups_on, gang_scheduler=gang) as (_, h):
        ns = await h.namespace("gang-init")
        await h.kube.create(TRAINING_RUNTIMES, initializer_runtime(policy), namespace=ns)
        job = trainjob("tj", num_nodes=2, runtime="gang-init", runtime_kind="TrainingRuntime")
        await h.kube.create(TRAINJOBS, job, namespace=ns)
        group = await eventually(lambda: h.get(groups, ns, "tj"), what="the TrainJob's PodGroup")
        assert group["spec"]["minMember"] == 2  # the nodes, not the warmup pod they wait for
        [warmup] = await h.wait_pod_names(ns, "tj", ["tj-warmup-0-0"])
        assert warmup["spec"]["schedulerName"] == "default-scheduler"  # scheduled alone
        await h.sim.finish(ns, "tj-warmup-0-0")  # waits for it to run
        nodes = ["tj-node-0-0", "tj-node-0-1"]
        pods = await h.wait_pod_names(ns, "tj", ["tj-warmup-0-0", *nodes])
        assert {p["spec"].get("schedulerName") for p in pods if p["metadata"]["name"] in nodes} == {
            "volcano" if gang == "volcano" else "scheduler-plugins-scheduler"
        }
        for name in nodes:  # each waits for its pod to run: the gang scheduler bound both
            await h.sim.finish(ns, name)
        await wait_condition(h, ns, "tj", "Complete")


async def test_deepspeeds_launcher_joins_the_gang_of_its_nodes() -> None:
    """Trainer's DeepSpeed runtime: the launcher waits for the nodes to be Ready (`dependsOn`
    `Ready`), so the PodGroup counts the nodes and the launcher joins their running gang (a gang
    counting it too never formed: the nodes waited for it, it waited for them)."""
    runtime = yaml.safe_load(DEEPSPEED.read_text())
    runtime["metadata"]["name"] = "deepspeed-gang"  # beside the dev stack's own runtime
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {}}
    groups_on = ("kubetrain.io", "trainer.kubeflow.org")
    async with running_stack(api_groups=groups_on, gang_scheduler="scheduler-plugins") as (_, h):
        ns = await h.namespace("gang-launcher")
        await h.kube.create(CLUSTER_TRAINING_RUNTIMES, runtime)
        job = trainjob("ds", num_nodes=3, runtime="deepspeed-gang")
        await h.kube.create(TRAINJOBS, job, namespace=ns)
        group = await eventually(
            lambda: h.get(SCHEDULER_PLUGINS_PODGROUPS, ns, "ds"), what="the TrainJob's PodGroup"
        )
        assert group["spec"]["minMember"] == 2  # the two node pods (the launcher is the third node)
        nodes = ["ds-node-0-0", "ds-node-0-1"]
        await h.wait_pod_names(ns, "ds", nodes)
        pods = await h.wait_pod_names(ns, "ds", [*nodes, "ds-launcher-0-0"])  # once the nodes are Ready
        launcher = next(p for p in pods if p["metadata"]["name"] == "ds-launcher-0-0")
        assert launcher["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "ds"
        await h.sim.finish(ns, "ds-launcher-0-0")  # waits for it to run: the scheduler bound it
        await wait_condition(h, ns, "ds", "Complete")
