"""A finished TrainJob gives back its Volcano PodGroup, through the controller against devcluster
with its Volcano simulator. Trainer keeps a finished TrainJob's PodGroup, which goes on holding
its `minResources` in the queue (Kubeflow Trainer issue 4033); kubetrain deletes it on `Complete`
and `Failed`, as it does every kind's, and keeps the headless Service as JobSet does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import SERVICES, TRAINING_RUNTIMES, TRAINJOBS, VOLCANO_PODGROUPS

from .controller_support import Harness, eventually, open_stack
from .test_trainjob_controller import training_runtime, trainjob, wait_condition

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for stack, h in open_stack(
        api_groups=("kubetrain.io", "trainer.kubeflow.org"), gang_scheduler="volcano"
    ):
        yield stack, h


def volcano_runtime(name: str) -> Obj:
    """Trainer's torch runtime under Volcano, where a failed pod fails the TrainJob (restartPolicy
    Never, backoffLimit 0, maxRestarts 0)."""
    rt = training_runtime(name)
    rt["spec"]["podGroupPolicy"] = {"volcano": {}}
    spec = rt["spec"]["template"]["spec"]
    job = spec["replicatedJobs"][0]["template"]["spec"]
    job["backoffLimit"] = 0
    job["template"]["spec"]["restartPolicy"] = "Never"
    spec["failurePolicy"] = {"maxRestarts": 0}
    return rt


async def gone(h: Harness, ns: str, name: str) -> bool:
    return await h.get(VOLCANO_PODGROUPS, ns, name) is None


@pytest.mark.parametrize("outcome", ["Complete", "Failed"])
async def test_a_finished_trainjob_deletes_its_pod_group(env: tuple[DevStack, Harness], outcome: str) -> None:
    _, h = env
    ns = await h.namespace(f"pg-{outcome.lower()}")
    await h.kube.create(TRAINING_RUNTIMES, volcano_runtime("gang"), namespace=ns)
    job = trainjob("tj", num_nodes=2, runtime="gang", runtime_kind="TrainingRuntime")
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "tj"), what="the TrainJob's PodGroup")
    assert group["spec"]["minMember"] == 2
    # The simulated Volcano admits the group; then the pods are made, and they end.
    await h.wait_pod_names(ns, "tj", ["tj-node-0-0", "tj-node-0-1"])
    await h.finish_all(ns, "tj", exit_code=0 if outcome == "Complete" else 1)
    await wait_condition(h, ns, "tj", outcome)
    await eventually(lambda: gone(h, ns, "tj"), what="the finished TrainJob's PodGroup deleted")
    # The headless Service stays, as JobSet keeps its own.
    service = await h.kube.get(SERVICES, ns, "tj")
    assert service["metadata"]["name"] == "tj"
