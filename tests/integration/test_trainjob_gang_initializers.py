"""A gang-scheduled TrainJob whose nodes wait for an initializer runs to the end, through the
webhook and the controller against devcluster with its Volcano and coscheduling simulators
(docs/behaviour.md §11). The PodGroup counted the initializer's pod too, so the first step's pod
waited for a gang only the nodes made after it could complete, and the TrainJob never started;
now the initializer runs alone and the nodes are the gang."""

from __future__ import annotations

import pytest

from kubetrain.kube.resources import (
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
