"""The unmodified Kubeflow Python SDK (`kubeflow-training` 1.9, a dev dependency) against an
operator serving kubeflow.org/v1: devcluster with kubetrain's webhooks and controller, the SDK's
own Kubernetes client over HTTPS with the stack's kubeconfig — create_job (an image, and a
train_func), get_job, list_jobs, wait_for_job_conditions, get_job_pod_names, get_job_logs (the
simulated kubelet serves logs) and delete_job, exactly as a notebook calls them; and an MPIJob
the SDK creates at kubeflow.org/v1, whose Launcher `get_job_logs(name, job_kind="MPIJob")` finds
with the SDK's defaults (`is_master=True`: training-operator v1's `job-role: master`).

The SDK is synchronous: each call runs in a worker thread while the stack serves on the loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from training_sdk import v1_mpijob

from kubetrain.dev.stack import DevStack

from .controller_support import Harness, eventually, open_stack

training = pytest.importorskip(
    "kubeflow.training", reason="kubeflow-training (a dev dependency) is not installed"
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    # Pods run until the test finishes them (the simulated kubelet), so every pod is seen.
    async for pair in open_stack(api_groups=("kubeflow.org",)):
        yield pair


async def sdk(env: tuple[DevStack, Harness], namespace: str) -> Any:
    stack, _ = env
    return await asyncio.to_thread(
        training.TrainingClient, config_file=str(stack.cluster.kubeconfig_path), namespace=namespace
    )


def train_mnist(parameters: dict[str, Any]) -> None:  # shipped to the pods as source by the SDK
    print("epochs", parameters["epochs"])


async def test_create_get_list_wait_pods_logs_delete(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("sdk")
    client = await sdk(env, ns)

    await asyncio.to_thread(
        client.create_job,
        name="image-job",
        base_image="docker.io/library/busybox:1.36",
        num_workers=3,  # the SDK's count includes the Master
    )
    await asyncio.to_thread(
        client.create_job,
        name="func-job",
        train_func=train_mnist,
        parameters={"epochs": 3},
        num_workers=1,
    )
    job = await asyncio.to_thread(client.get_job, "image-job")
    assert job.api_version == "kubeflow.org/v1" and job.kind == "PyTorchJob"
    assert job.spec.run_policy.clean_pod_policy == "Running"  # defaulted by kubetrain's webhook
    names = sorted(j.metadata.name for j in await asyncio.to_thread(client.list_jobs))
    assert names == ["func-job", "image-job"]

    async def three_pods() -> list[str] | None:
        names = await asyncio.to_thread(client.get_job_pod_names, "image-job")
        return sorted(names) if len(names) == 3 else None

    pods = await eventually(three_pods, what="the SDK sees image-job's three pods")
    assert pods == ["image-job-master-0", "image-job-worker-0", "image-job-worker-1"]
    master = await asyncio.to_thread(client.get_job_pod_names, "image-job", is_master=True)
    assert master == ["image-job-master-0"]
    workers = await asyncio.to_thread(client.get_job_pod_names, "image-job", replica_type="worker")
    assert sorted(workers) == ["image-job-worker-0", "image-job-worker-1"]

    await h.wait_pod_names(ns, "func-job", ["func-job-master-0"])
    for pod in ["image-job-worker-0", "image-job-worker-1", "image-job-master-0", "func-job-master-0"]:
        await h.sim.finish(ns, pod)
    done = await asyncio.to_thread(
        client.wait_for_job_conditions, "image-job", timeout=60, polling_interval=0.2
    )
    assert client.is_job_succeeded(job=done)
    spec = done.spec.pytorch_replica_specs
    assert (spec["Master"].replicas, spec["Worker"].replicas) == (1, 2)
    # kubetrain's own status fields (the record of succeeded indexes) are left out by the SDK's models
    raw = await asyncio.to_thread(
        client.custom_api.get_namespaced_custom_object, "kubeflow.org", "v1", ns, "pytorchjobs", "image-job"
    )
    assert raw["status"]["completedIndexes"] == {"Master": "0", "Worker": "0-1"}
    assert done.status.replica_statuses["Worker"].succeeded == 2
    await asyncio.to_thread(client.wait_for_job_conditions, "func-job", timeout=60, polling_interval=0.2)

    logs, _ = await asyncio.to_thread(client.get_job_logs, "func-job")
    (log,) = logs.values()
    # The simulated kubelet prints the command the SDK built around the function's source and
    # the env the operator set (the job's headless Service by default).
    assert "train_mnist({'\"'\"'epochs'\"'\"': 3})" in log
    assert f"MASTER_ADDR=func-job-master-0.func-job.{ns}.svc\n" in log
    assert "exited with code 0" in log

    await asyncio.to_thread(client.delete_job, "image-job")

    async def gone() -> bool | None:
        left = [j.metadata.name for j in await asyncio.to_thread(client.list_jobs)]
        return True if left == ["func-job"] else None

    await eventually(gone, what="image-job deleted through the SDK")


async def test_mpijob_created_at_v1_gets_launcher_logs_with_the_sdk_defaults(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("sdkmpi")
    client = await sdk(env, ns)
    launcher = ["mpirun", "-n", "2", "/home/mpiuser/pi"]
    job = v1_mpijob(training.models, "pi", "mpioperator/mpi-pi:openmpi", launcher, None)
    await asyncio.to_thread(client.create_job, job)
    await h.wait_pod_names(ns, "pi", ["pi-launcher-0", "pi-worker-0", "pi-worker-1"])
    master = await asyncio.to_thread(client.get_job_pod_names, "pi", is_master=True)
    assert master == ["pi-launcher-0"]
    await h.sim.finish(ns, "pi-launcher-0")
    await asyncio.to_thread(
        client.wait_for_job_conditions, "pi", job_kind="MPIJob", timeout=60, polling_interval=0.2
    )

    logs, _ = await asyncio.to_thread(client.get_job_logs, "pi", job_kind="MPIJob")
    assert list(logs) == ["pi-launcher-0"]
    (log,) = logs.values()
    assert "$ mpirun -n 2 /home/mpiuser/pi" in log
    assert "K_MPI_JOB_ROLE=launcher\n" in log and "exited with code 0" in log
