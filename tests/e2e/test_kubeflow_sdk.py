"""The unmodified Kubeflow Python SDK (`kubeflow-training` 1.9, a dev dependency) against
`kubetrain run` serving kubeflow.org/v1 (and kubetrain.io/v1) on the cluster $KUBECONFIG names,
behind the chart's webhooks in URL mode: create_job, get_job, list_jobs, get_job_pod_names,
wait_for_job_conditions, get_job_logs and delete_job, exactly as a notebook calls them; and an
MPIJob it creates at kubeflow.org/v1, whose Launcher it finds with its defaults (`is_master=True`:
training-operator v1's `job-role: master`, from the version kube-apiserver's requestKind names).

The SDK is synchronous: each call runs in a worker thread."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from e2e import scenarios_support as support
from training_sdk import v1_mpijob

training = pytest.importorskip(
    "kubeflow.training", reason="kubeflow-training (a dev dependency) is not installed"
)


pytestmark = support.E2E
E2E_API_GROUPS = ("kubetrain.io", "kubeflow.org")  # what the operator serves (the `cluster` fixture)


async def test_the_kubeflow_sdk_runs_a_job_end_to_end(cluster: Any) -> None:
    client = await asyncio.to_thread(
        training.TrainingClient, config_file=cluster.kubeconfig, namespace=cluster.namespace
    )
    await asyncio.to_thread(
        client.create_job,
        name="sdk-job",
        base_image=os.environ.get("KUBETRAIN_E2E_IMAGE", "busybox:1.36"),
        num_workers=3,  # the SDK's count includes the Master
    )
    job = await asyncio.to_thread(client.get_job, "sdk-job")
    assert job.api_version == "kubeflow.org/v1" and job.kind == "PyTorchJob"
    assert job.spec.run_policy.clean_pod_policy == "Running"  # defaulted by kubetrain's webhook
    assert [j.metadata.name for j in await asyncio.to_thread(client.list_jobs)] == ["sdk-job"]

    async def three_pods() -> list[str] | None:
        names = await asyncio.to_thread(client.get_job_pod_names, "sdk-job")
        return sorted(names) if len(names) == 3 else None

    pods = await support.eventually(three_pods, within=90, what="the SDK sees sdk-job's three pods")
    assert pods == ["sdk-job-master-0", "sdk-job-worker-0", "sdk-job-worker-1"]
    master = await asyncio.to_thread(client.get_job_pod_names, "sdk-job", is_master=True)
    assert master == ["sdk-job-master-0"]

    await cluster.finish_pods("sdk-job", 3)
    done = await asyncio.to_thread(
        client.wait_for_job_conditions, "sdk-job", timeout=90, polling_interval=0.5
    )
    assert client.is_job_succeeded(job=done)

    logs, _ = await asyncio.to_thread(client.get_job_logs, "sdk-job")
    assert set(logs) == {"sdk-job-master-0"}  # the master's log, as the SDK reads it by default

    await asyncio.to_thread(client.delete_job, "sdk-job")

    async def gone() -> bool | None:
        return True if not await asyncio.to_thread(client.list_jobs) else None

    await support.eventually(gone, within=60, what="sdk-job deleted through the SDK")


async def test_the_sdk_finds_a_v1_mpijob_launcher_with_its_defaults(cluster: Any) -> None:
    client = await asyncio.to_thread(
        training.TrainingClient, config_file=cluster.kubeconfig, namespace=cluster.namespace
    )
    image = os.environ.get("KUBETRAIN_E2E_IMAGE", "busybox:1.36")
    launcher, worker = ["sh", "-c", "echo launcher done"], ["sh", "-c", "sleep 600"]  # no sshd: no mpirun
    job = v1_mpijob(training.models, "sdk-mpi", image, launcher, worker)
    await asyncio.to_thread(client.create_job, job)

    async def launcher() -> list[str] | None:
        names = await asyncio.to_thread(client.get_job_pod_names, "sdk-mpi", is_master=True)
        return names or None

    found = await support.eventually(launcher, within=90, what="the SDK sees sdk-mpi's master pod")
    assert found == ["sdk-mpi-launcher-0"]
    await cluster.finish_pods("sdk-mpi", 3)
    done = await asyncio.to_thread(
        client.wait_for_job_conditions, "sdk-mpi", job_kind="MPIJob", timeout=90, polling_interval=0.5
    )
    assert client.is_job_succeeded(job=done, job_kind="MPIJob")
    logs, _ = await asyncio.to_thread(client.get_job_logs, "sdk-mpi", job_kind="MPIJob")
    assert set(logs) == {"sdk-mpi-launcher-0"}
    await asyncio.to_thread(client.delete_job, "sdk-mpi", job_kind="MPIJob")
