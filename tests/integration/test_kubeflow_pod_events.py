"""training-operator's per-pod Events (docs/behaviour.md §5) through the real controller against
devcluster: a kubeflow.org/v1 PyTorchJob with restartPolicy ExitCode shows `SuccessfulCreatePod`
and `SuccessfulCreateService` for its children, and after a retryable exit `ExitedWithCode`, the
failed pod's `SuccessfulDeletePod` and its re-creation counted on the same Event — beside the
job's Restarting transition, which the per-pod events never crowd out."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import SERVICES, job_resources_in

from .controller_support import KUBEFLOW_API_GROUPS, Harness, eventually, job_manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
PYTORCHJOBS = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]


STACK_OPTIONS = {"api_groups": KUBEFLOW_API_GROUPS}


async def messages(h: Harness, ns: str, reason: str) -> dict[str, Obj]:
    return {str(e["message"]): e for e in await h.events(ns, "r") if e.get("reason") == reason}


async def test_a_kubeflow_pytorchjob_gets_training_operators_per_pod_events(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("kfpe")
    manifest = job_manifest("PyTorchJob", "r", {"Master": 1, "Worker": 1}, restart_policy="ExitCode")
    manifest["apiVersion"] = "kubeflow.org/v1"
    await h.kube.create(PYTORCHJOBS, manifest, namespace=ns)
    await h.wait_pod_names(ns, "r", ["r-master-0", "r-worker-0"])

    async def created_pods() -> dict[str, Obj] | None:
        got = await messages(h, ns, "SuccessfulCreatePod")
        return got if {"Created pod: r-master-0", "Created pod: r-worker-0"} <= set(got) else None

    created = await eventually(created_pods, what="SuccessfulCreatePod for both pods")
    event = created["Created pod: r-worker-0"]
    assert event["type"] == "Normal"
    assert event["involvedObject"]["kind"] == "PyTorchJob"
    assert event["involvedObject"]["apiVersion"] == "kubeflow.org/v1"
    services = [s["metadata"]["name"] for s in (await h.kube.list(SERVICES, ns))["items"]]
    assert services

    async def created_services() -> bool:
        got = await messages(h, ns, "SuccessfulCreateService")
        return {f"Created service: {name}" for name in services} <= set(got)

    await eventually(created_services, what=f"SuccessfulCreateService for {services}")

    worker = await eventually(lambda: h.running_pod(ns, "r-worker-0"), what="r-worker-0 Running")
    await h.sim.finish(ns, "r-worker-0", exit_code=137)  # retryable under ExitCode: recreated
    exited = await h.wait_event(ns, "r", "ExitedWithCode")
    assert (exited["type"], exited["message"]) == ("Normal", f"Pod: {ns}.r-worker-0 exited with code 137")
    deleted = await h.wait_event(ns, "r", "SuccessfulDeletePod")
    assert (deleted["type"], deleted["message"]) == ("Normal", "Deleted pod: r-worker-0")
    await h.wait_recreated(ns, "r-worker-0", worker["metadata"]["uid"])

    async def recreated() -> bool:
        return (await messages(h, ns, "SuccessfulCreatePod"))["Created pod: r-worker-0"].get("count") == 2

    await eventually(recreated, what="the re-created pod counted on its SuccessfulCreatePod Event")
    assert (await h.wait_event(ns, "r", "PyTorchJobRestarting"))["type"] == "Warning"
