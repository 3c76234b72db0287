"""The unmodified Kubeflow SDK (`kubeflow` 0.5, `TrainerClient`) against `kubetrain run` serving
trainer.kubeflow.org on the cluster $KUBECONFIG names, behind the chart's webhooks in URL mode:
list_runtimes (Trainer's default ClusterTrainingRuntimes, created when missing), train a 2-node
torch TrainJob, get_job (steps node-0, node-1), wait_for_job_status Complete, get_job_events,
delete_job; pods carry Trainer's env; an invalid TrainJob is refused naming its fields.

The SDK is synchronous: each call runs in a worker thread."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from e2e import scenarios_support as support
from trainer_sdk import trainer_client

from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import PODS, TRAINJOBS

trainer = pytest.importorskip("kubeflow.trainer", reason="kubeflow (a dev dependency) is not installed")


pytestmark = support.E2E
E2E_API_GROUPS = ("kubetrain.io", "trainer.kubeflow.org")  # what the operator serves (the `cluster` fixture)


async def sdk_client(cluster: Any) -> Any:
    return await trainer_client(cluster.kubeconfig, cluster.namespace)


async def train_two_nodes(client: Any, runtime: str) -> str:
    """The name of a 2-node TrainJob of `runtime` made through the SDK, of $KUBETRAIN_E2E_IMAGE."""
    image = os.environ.get("KUBETRAIN_E2E_IMAGE", "busybox:1.36")
    container = trainer.CustomTrainerContainer(image=image, num_nodes=2)
    name: str = await asyncio.to_thread(client.train, runtime=runtime, trainer=container)
    return name


@pytest_asyncio.fixture(scope="module", loop_scope="module", autouse=True)
async def runtimes(cluster: Any) -> AsyncIterator[None]:
    async with support.default_runtimes_installed(cluster.client):
        yield


async def test_the_sdk_trains_a_torch_job_end_to_end(cluster: Any) -> None:
    client = await sdk_client(cluster)
    names = {r.name for r in await asyncio.to_thread(client.list_runtimes)}
    assert {"torch-distributed", "deepspeed-distributed", "jax-distributed"} <= names

    name = await train_two_nodes(client, "torch-distributed")

    async def two_steps() -> Any:
        job = await asyncio.to_thread(client.get_job, name)
        return job if sorted(s.name for s in job.steps) == ["node-0", "node-1"] else None

    await support.eventually(two_steps, within=90, what=f"the SDK sees {name}'s two node steps")
    pod = await cluster.client.get(PODS, cluster.namespace, f"{name}-node-0-1")
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0]["env"]}
    assert env["PET_NNODES"] == "2" and env["PET_MASTER_ADDR"] == f"{name}-node-0-0.{name}"
    assert env["PET_MASTER_PORT"] == "29500"
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert pod["spec"]["hostname"] == f"{name}-node-0-1" and pod["spec"]["subdomain"] == name

    await cluster.finish_pods(name, 2)
    done = await asyncio.to_thread(client.wait_for_job_status, name, {"Complete"}, 120, 1)
    assert done.status == "Complete"
    events = await asyncio.to_thread(client.get_job_events, name)
    assert "AllJobsCompleted" in {e.reason for e in events}

    await asyncio.to_thread(client.delete_job, name)

    async def gone() -> bool | None:
        return True if not await asyncio.to_thread(client.list_jobs) else None

    await support.eventually(gone, within=60, what=f"{name} deleted through the SDK")


async def test_the_sdk_trains_an_mpi_job_to_complete(cluster: Any) -> None:
    client = await sdk_client(cluster)
    name = await train_two_nodes(client, "deepspeed-distributed")

    async def launcher() -> Any:
        try:
            return await cluster.client.get(PODS, cluster.namespace, f"{name}-launcher-0-0")
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    pod = await support.eventually(launcher, within=120, what=f"{name}'s launcher (after its node is Ready)")
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    if cluster.simulator is not None:
        await cluster.simulator.finish(cluster.namespace, f"{name}-launcher-0-0")
    done = await asyncio.to_thread(client.wait_for_job_status, name, {"Complete"}, 180, 1)
    assert done.status == "Complete"
    await asyncio.to_thread(client.delete_job, name)


async def test_an_invalid_trainjob_is_refused_naming_its_fields(cluster: Any) -> None:
    bad = support.trainjob(
        cluster.namespace, "bad", {"numNodes": 0, "env": [{"name": "PET_MASTER_ADDR", "value": "x"}]}
    )
    with pytest.raises(ApiError) as refused:
        await cluster.client.create(TRAINJOBS, bad)
    assert "spec.trainer.numNodes" in str(refused.value)
    assert "spec.trainer.env[0].name" in str(refused.value)
