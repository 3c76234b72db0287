"""Per-pod service mode through the real webhooks and controller against devcluster: one
Service per pod (created before the pods, removed when the job finishes), Kubeflow's bare
addresses in the environment, and the annotation refused when it would change."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import SERVICES, job_resource

from .controller_support import Harness, eventually, job_manifest, pod_env

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
MODE = "kubetrain.io/service-mode"


async def services_of(h: Harness, ns: str, job_name: str) -> list[str]:
    page = await h.kube.list(SERVICES, ns, label_selector=f"kubetrain.io/job-name={job_name}")
    return sorted(s["metadata"]["name"] for s in page["items"] if not s["metadata"].get("deletionTimestamp"))


async def test_per_pod_services_live_and_go_with_the_job(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("svcmode")
    job = job_manifest("PyTorchJob", "ddp", {"Master": 1, "Worker": 2}, annotations={MODE: "per-pod"})
    await h.create_job(job, ns)
    pods = await h.wait_pod_names(ns, "ddp", ["ddp-master-0", "ddp-worker-0", "ddp-worker-1"])
    assert await services_of(h, ns, "ddp") == ["ddp-master-0", "ddp-worker-0", "ddp-worker-1"]
    assert await h.service(ns, "ddp") is None  # no job-wide Service in this mode
    svc = await h.service(ns, "ddp-worker-1")
    assert svc is not None
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {
        "kubetrain.io/job-name": "ddp",
        "kubetrain.io/replica-type": "worker",
        "kubetrain.io/replica-index": "1",
    }
    assert [p["port"] for p in svc["spec"]["ports"]] == [23456]
    env = pod_env(next(p for p in pods if p["metadata"]["name"] == "ddp-worker-0"))
    assert env["MASTER_ADDR"] == "ddp-master-0"
    assert env["PET_MASTER_ADDR"] == "ddp-master-0"

    async def change_mode() -> ApiError | None:
        """The refusal of an update switching the mode (None: a 409 Conflict with the
        controller's own status write came first — read the job again and retry)."""
        stored = await h.job("PyTorchJob", ns, "ddp")
        assert stored is not None
        stored["metadata"]["annotations"][MODE] = "headless"
        with pytest.raises(ApiError) as refused:
            await h.kube.replace(job_resource("PyTorchJob"), stored)
        return None if refused.value.is_conflict else refused.value

    refusal = await eventually(change_mode, what="the mode change refused")
    assert "immutable" in str(refusal) and MODE in str(refusal)

    await h.sim.finish(ns, "ddp-master-0")
    await h.wait_condition("PyTorchJob", ns, "ddp", "Succeeded")

    async def gone() -> bool | None:
        return True if await services_of(h, ns, "ddp") == [] else None

    await eventually(gone, what="the per-pod Services deleted with cleanPodPolicy Running")


async def test_a_foreign_service_of_a_pod_name_blocks_until_deleted(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("svcblk")
    foreign = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "blk-worker-0"},
        "spec": {"clusterIP": "None", "selector": {"app": "other"}, "ports": [{"port": 80}]},
    }
    await h.kube.create(SERVICES, foreign, namespace=ns)
    job = job_manifest("PyTorchJob", "blk", {"Master": 1, "Worker": 1}, annotations={MODE: "per-pod"})
    await h.create_job(job, ns)
    event = await h.wait_event(ns, "blk", "ServiceConflict")
    assert "blk-worker-0" in event["message"]
    assert await h.pods(ns, "blk") == []
    await h.kube.delete(SERVICES, ns, "blk-worker-0")  # its deletion alone wakes the job up
    await h.wait_pod_names(ns, "blk", ["blk-master-0", "blk-worker-0"])
    assert await services_of(h, ns, "blk") == ["blk-master-0", "blk-worker-0"]
