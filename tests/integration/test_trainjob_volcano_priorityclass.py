"""A Volcano TrainJob's priorityClassName through the webhook against devcluster (docs/behaviour.md
§11): under Trainer's example 04-volcano-integration.yaml runtime with its trainer's pod template
naming a PriorityClass, a class that does not exist is refused with Trainer's path and message
(its volcano plugin's `Validate`); one that exists is admitted and becomes the PodGroup's
priorityClassName; `system-cluster-critical` is admitted without being looked up."""

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
from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, PRIORITY_CLASSES, TRAINJOBS, VOLCANO_PODGROUPS

from .controller_support import Harness, eventually, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
EXAMPLE = (
    Path(__file__).resolve().parents[1] / "data" / "trainer" / "examples" / "04-volcano-integration.yaml"
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for stack, h in open_stack(
        api_groups=("kubetrain.io", "trainer.kubeflow.org"), gang_scheduler="volcano"
    ):
        await h.kube.create(
            PRIORITY_CLASSES,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "research-high"},
                "value": 1000,
            },
        )
        yield stack, h


def example() -> tuple[Obj, Obj]:
    runtime, job = (d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d)
    return runtime, job


async def runtime_naming(h: Harness, priority_class: str) -> str:
    """A copy of the example's ClusterTrainingRuntime whose trainer pods name `priority_class`."""
    runtime, _ = example()
    name = f"volcano-{priority_class}"
    runtime["metadata"]["name"] = name
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    node["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    await h.kube.create(CLUSTER_TRAINING_RUNTIMES, runtime)
    return name


def trainjob(name: str, runtime: str) -> Obj:
    _, job = example()
    job = copy.deepcopy(job)
    job["metadata"]["name"] = name
    job["spec"]["runtimeRef"]["name"] = runtime
    return job


async def test_a_class_that_does_not_exist_is_refused(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("vpc-missing")
    runtime = await runtime_naming(h, "no-such-class")
    with pytest.raises(ApiError) as refused:
        await h.kube.create(TRAINJOBS, trainjob("missing", runtime), namespace=ns)
    assert refused.value.status == 422
    assert (
        'spec.templateSpec.priorityClassName: Invalid: "no-such-class": PriorityClass "no-such-class" '
        'doesn\'t exist: priorityclasses.scheduling.k8s.io "no-such-class" not found'
    ) in str(refused.value)
    assert await h.get(TRAINJOBS, ns, "missing") is None


async def test_a_class_that_exists_is_admitted_and_names_the_pod_groups_priority(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("vpc-existing")
    runtime = await runtime_naming(h, "research-high")
    await h.kube.create(TRAINJOBS, trainjob("existing", runtime), namespace=ns)
    group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "existing"), what="PodGroup existing")
    assert group["spec"]["priorityClassName"] == "research-high"


async def test_a_system_class_is_admitted(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("vpc-system")
    runtime = await runtime_naming(h, "system-cluster-critical")
    await h.kube.create(TRAINJOBS, trainjob("system", runtime), namespace=ns)
    assert await h.get(TRAINJOBS, ns, "system") is not None
