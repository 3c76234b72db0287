"""A TrainJob's Volcano queue from its runtime, through the webhook and the controller against
devcluster with its Volcano simulator (docs/behaviour.md §8 "queue", §11): Trainer's own
example 04-volcano-integration.yaml with `scheduling.volcano.sh/queue-name` on its runtime's
template gets a PodGroup in that queue; a runtimePatch naming another queue overrides it (as
Trainer's `TrainingRuntime.newRuntimeInfo` merges them and its volcano plugin's `Build` reads
them); an empty one is refused with Trainer's message."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, TRAINJOBS, VOLCANO_PODGROUPS

from .controller_support import Harness, eventually, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "trainer" / "examples"
EXAMPLE = EXAMPLES / "04-volcano-integration.yaml"
QUEUE = "scheduling.volcano.sh/queue-name"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for stack, h in open_stack(
        api_groups=("kubetrain.io", "trainer.kubeflow.org"), gang_scheduler="volcano"
    ):
        runtime, _ = example()
        runtime["spec"]["template"]["metadata"] = {"annotations": {QUEUE: "research"}}
        await h.kube.create(CLUSTER_TRAINING_RUNTIMES, runtime)
        yield stack, h


def example() -> tuple[Obj, Obj]:
    """The example's ClusterTrainingRuntime (podGroupPolicy volcano) and TrainJob (4 nodes)."""
    runtime, job = (d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d)
    return runtime, job


def trainjob(name: str, patched_queue: str | None = None) -> Obj:
    _, job = example()
    job = copy.deepcopy(job)
    job["metadata"]["name"] = name
    if patched_queue is not None:
        job["spec"]["runtimePatches"] = [
            {
                "manager": "example.com/scheduler",
                "trainingRuntimeSpec": {"template": {"metadata": {"annotations": {QUEUE: patched_queue}}}},
            }
        ]
    return job


async def queue_of(h: Harness, ns: str, name: str) -> object:
    group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, name), what=f"PodGroup {name}")
    assert group["spec"]["minMember"] == 4
    return group["spec"].get("queue")


async def test_the_runtimes_queue_annotation_is_the_pod_groups_queue(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("vq-runtime")
    await h.kube.create(TRAINJOBS, trainjob("volcano-example"), namespace=ns)
    assert await queue_of(h, ns, "volcano-example") == "research"


async def test_a_runtime_patch_overrides_the_runtimes_queue(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("vq-patch")
    await h.kube.create(TRAINJOBS, trainjob("patched", "production"), namespace=ns)
    assert await queue_of(h, ns, "patched") == "production"


async def test_an_empty_queue_annotation_is_refused(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("vq-empty")
    with pytest.raises(ApiError) as refused:
        await h.kube.create(TRAINJOBS, trainjob("emptied", ""), namespace=ns)
    assert refused.value.status == 422
    message = str(refused.value)
    assert f"spec.annotations[{QUEUE}]" in message
    assert "Volcano queue name must not be empty" in message
    assert await h.get(TRAINJOBS, ns, "emptied") is None
