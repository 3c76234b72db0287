"""The integer `format`s of the job CRDs, as an API server enforces them: kubetrain's generated
MPIJob CRD in kubeflow.org declares what mpi-operator's (controller-gen from `*int32`, `*int64`,
`metav1.Time`) does, so a replica count beyond int32 is refused by the API server itself (as by
kube-apiserver, kube-openapi's `numberValidator`) with upstream's words, and the boundary value
is accepted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client

from kubetrain.jobs.crdgen import job_crds
from kubetrain.kube.client import KubeClient
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, ResourceRef

MPIJOBS = ResourceRef("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", True)
INT32_MAX = 2**31 - 1


def mpijob(name: str, workers: int, backoff_limit: int = 3) -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "mpi", "image": "mpioperator/mpi-pi:openmpi"}]}}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"backoffLimit": backoff_limit, "activeDeadlineSeconds": 2**40},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": pod},
                "Worker": {"replicas": workers, "template": pod},
            },
        },
    }


@pytest.fixture
async def kube(api: client.ApiClient) -> KubeClient:
    k = KubeClient(api, qps=0)
    (crd,) = [c for c in job_crds("kubeflow.org") if c["spec"]["names"]["kind"] == "MPIJob"]
    await k.create(CUSTOM_RESOURCE_DEFINITIONS, crd)

    async def served() -> None:
        while True:
            try:
                await k.list(MPIJOBS, "default")
                return
            except ApiError:
                await asyncio.sleep(0.05)

    await asyncio.wait_for(served(), 10)
    return k


async def test_int32_fields_refuse_values_beyond_int32(kube: KubeClient) -> None:
    with pytest.raises(ApiError) as refused:
        await kube.create(MPIJOBS, mpijob("too-wide", INT32_MAX + 1))
    assert refused.value.status == 422
    text = "Checked value must be of type integer with format int32 in spec.mpiReplicaSpecs.Worker.replicas"
    assert (
        refused.value.message
        == f'MPIJob.kubeflow.org "too-wide" is invalid: <nil>: Invalid value: "": {text}'
    )

    with pytest.raises(ApiError) as negative:
        await kube.create(MPIJOBS, mpijob("too-low", 2, backoff_limit=-(2**31) - 1))
    assert "format int32 in spec.runPolicy.backoffLimit" in negative.value.message


async def test_the_int32_boundary_and_an_int64_deadline_are_accepted(kube: KubeClient) -> None:
    created = await kube.create(MPIJOBS, mpijob("widest", INT32_MAX))
    assert created["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == INT32_MAX
    assert created["spec"]["runPolicy"]["activeDeadlineSeconds"] == 2**40
