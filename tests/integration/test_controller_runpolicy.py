"""Run policy (docs/behaviour.md §7) that needs no clock: each cleanPodPolicy, and managedBy."""

from __future__ import annotations

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import SERVICES, job_resource

from .controller_support import Harness, eventually, is_true, job_manifest

TFJOBS = job_resource("TFJob")

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def finish_with_one_still_running(h: Harness, ns: str, name: str, policy: str) -> None:
    """TF job Chief + Worker + PS: Worker done, then Chief done → Succeeded while PS still runs."""
    manifest = job_manifest(
        "TFJob", name, {"Chief": 1, "Worker": 1, "PS": 1}, run_policy={"cleanPodPolicy": policy}
    )
    await h.create_job(manifest, ns)
    await h.wait_pods(ns, name, 3)
    await h.sim.finish(ns, f"{name}-worker-0")
    await h.sim.finish(ns, f"{name}-chief-0")
    await h.wait_condition("TFJob", ns, name, "Succeeded")


async def test_clean_pod_policy_all(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("cpa")
    await finish_with_one_still_running(h, ns, "cpa", "All")
    # Every pod, finished or not, and the Service are deleted.
    await h.wait_pod_names(ns, "cpa", [])
    await eventually(lambda: h.absent(SERVICES, ns, "cpa"), what="Service deleted")
    job = await h.job("TFJob", ns, "cpa")
    assert is_true(job, "Succeeded")


async def test_clean_pod_policy_running(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("cpr")
    await finish_with_one_still_running(h, ns, "cpr", "Running")
    # The running PS goes; the finished pods stay (their logs remain readable).
    pods = await h.wait_pod_names(ns, "cpr", ["cpr-chief-0", "cpr-worker-0"])
    assert {p["status"]["phase"] for p in pods} == {"Succeeded"}
    await eventually(lambda: h.absent(SERVICES, ns, "cpr"), what="Service deleted")


async def test_clean_pod_policy_none(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("cpn")
    await finish_with_one_still_running(h, ns, "cpn", "None")
    # Give the controller every chance to (wrongly) clean up: a later reconcile of the same job
    # (an annotation change) must still leave everything in place.
    seen = await h.job("TFJob", ns, "cpn")
    assert seen is not None
    await h.kube.patch(TFJOBS, ns, "cpn", {"metadata": {"annotations": {"example.com/poke": "1"}}})
    await h.wait_job(
        "TFJob", ns, "cpn", lambda j: "example.com/poke" in j["metadata"].get("annotations", {}), "patched"
    )
    assert h.stack.controller is not None
    await eventually(lambda: len(h.stack.controller.queue) == 0, what="queue idle")  # type: ignore[union-attr]
    pods = await h.pods(ns, "cpn")
    assert sorted((p["metadata"]["name"], p["status"]["phase"]) for p in pods) == [
        ("cpn-chief-0", "Succeeded"),
        ("cpn-ps-0", "Running"),
        ("cpn-worker-0", "Succeeded"),
    ]
    assert not any(p["metadata"].get("deletionTimestamp") for p in pods)
    assert await h.service(ns, "cpn") is not None


async def test_managed_by_other_controller_is_left_alone(env: tuple[DevStack, Harness]) -> None:
    stack, h = env
    ns = await h.namespace("mb")
    other = job_manifest("PyTorchJob", "other", {"Master": 1}, run_policy={"managedBy": "example.com/kueue"})
    ours = job_manifest("PyTorchJob", "ours", {"Master": 1})
    await h.create_job(other, ns)
    await h.create_job(ours, ns)
    # Once our own job (created after it) has pods, the other one has been seen and skipped.
    await h.wait_pods(ns, "ours", 1)
    assert stack.controller is not None
    await eventually(
        lambda: stack.controller is not None and len(stack.controller.queue) == 0, what="queue idle"
    )
    assert await h.pods(ns, "other") == []
    job = await h.job("PyTorchJob", ns, "other")
    assert not (job or {}).get("status")
    assert await h.service(ns, "other") is None
