"""What a tenant with ordinary rights in a namespace (create and edit pods, write jobs) cannot do
to a job, and how a job that cannot get its pods says so: over a quota, one Running=False
condition and one Warning event, not an event per pod; forged pods neither finish nor fail
another job; a name squatted by a pod the job does not own is reported, not swallowed; a
terminal status the operator did not write deletes no running pod."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import PODS, job_resource

from .controller_support import (
    CONTROLLER_USER_AGENT,
    Harness,
    condition,
    eventually,
    is_true,
    job_manifest,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUOTA = "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"


STACK_OPTIONS = {"webhook": False, "training_policies": False}


def running_false(reason: str) -> Any:
    def check(job: dict[str, Any]) -> bool:
        cond = condition(job, "Running")
        return cond is not None and cond["status"] == "False" and cond["reason"] == reason

    return check


async def events_of(h: Harness, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in await h.events(ns, name) if e.get("reason") == reason]


async def test_a_job_over_its_quota_gets_one_condition_and_one_event_not_one_per_pod(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("quota")
    rule = h.faults.fail(
        verb="create", resource="pods", namespace=ns, nth=3, count=10**6, status=403, message=QUOTA
    )
    try:
        await h.create_job(job_manifest("PyTorchJob", "big", {"Master": 1, "Worker": 300}), ns)
        job = await h.wait_job(
            "PyTorchJob", ns, "big", running_false("FailedCreatePod"), "Running=False FailedCreatePod"
        )
        assert QUOTA in (condition(job, "Running") or {})["message"]
        # Retried with back-off: later refusals of the same kind change nothing, say nothing new.
        await eventually(lambda: rule.fired >= 6, what="a few retries")
        events = await events_of(h, ns, "big", "FailedCreatePod")
        assert len(events) == 1 and events[0]["count"] == 1 and events[0]["type"] == "Warning"
        sent = h.requests.count(
            verb="create", resource="pods", user_agent=CONTROLLER_USER_AGENT, namespace=ns
        )
        assert sent <= rule.fired + 3  # slow start: each retry sends one pod, not the wave
        assert len(await h.pods(ns, "big")) == 2
    finally:
        h.faults.clear()
    # The quota is raised: the next retry creates the rest and the condition clears.
    await h.kube.patch(job_resource("PyTorchJob"), ns, "big", {"metadata": {"labels": {"nudge": "1"}}})
    await h.wait_pods(ns, "big", 301)
    await h.wait_condition("PyTorchJob", ns, "big", "Running", within=60)


async def test_a_forged_master_pod_that_succeeds_does_not_finish_the_job(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("forge")
    created = await h.create_job(job_manifest("PyTorchJob", "victim", {"Master": 1, "Worker": 2}), ns)
    await h.wait_pods(ns, "victim", 3)
    await h.wait_condition("PyTorchJob", ns, "victim", "Running")
    meta = created["metadata"]
    owner = {"apiVersion": "kubetrain.io/v1", "kind": "PyTorchJob", "name": "victim", "uid": meta["uid"]}
    labels = {
        "kubetrain.io/job-name": "victim",
        "kubetrain.io/job-kind": "PyTorchJob",
        "kubetrain.io/replica-type": "master",
        "kubetrain.io/replica-index": "0",
        "kubetrain.io/job-role": "master",
    }
    forged = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "evil", "labels": labels, "ownerReferences": [{**owner, "controller": True}]},
        "spec": {"containers": [{"name": "pytorch", "image": "busybox:1.36"}]},
    }
    await h.kube.create(PODS, forged, namespace=ns)
    await h.sim.finish(ns, "evil", exit_code=0)
    # A later pod event the controller must act on: it has seen the forged pod's success by then.
    worker = await h.pod(ns, "victim-worker-1")
    assert worker is not None
    await h.kube.delete(PODS, ns, "victim-worker-1")
    await h.wait_recreated(ns, "victim-worker-1", worker["metadata"]["uid"])
    job = await h.job("PyTorchJob", ns, "victim")
    assert not is_true(job, "Succeeded") and is_true(job, "Running")
    await h.wait_pods(ns, "victim", 3)
    # The real Master's success still finishes it.
    await h.sim.finish(ns, "victim-master-0", exit_code=0)
    await h.wait_condition("PyTorchJob", ns, "victim", "Succeeded")


async def test_a_squatted_pod_name_is_a_warning_and_a_condition_until_the_squatter_goes(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("squat")
    squatter = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sq-worker-0", "annotations": {"kubetrain.io/prior-restarts": "99"}},
        "spec": {"containers": [{"name": "pytorch", "image": "busybox:1.36"}]},
    }
    await h.kube.create(PODS, squatter, namespace=ns)
    manifest = job_manifest("PyTorchJob", "sq", {"Master": 1, "Worker": 2}, run_policy={"backoffLimit": 3})
    await h.create_job(manifest, ns)
    job = await h.wait_job(
        "PyTorchJob", ns, "sq", running_false("PodNameConflict"), "Running=False PodNameConflict"
    )
    assert (
        "pod sq-worker-0 already exists and is not owned by PyTorchJob sq"
        in condition(job, "Running")["message"]
    )
    await h.wait_event(ns, "sq", "PodNameConflict")
    assert not is_true(job, "Failed")
    await h.kube.delete(PODS, ns, "sq-worker-0", grace_period_seconds=0)
    await h.wait_condition("PyTorchJob", ns, "sq", "Running")
    pod = await h.pod(ns, "sq-worker-0")
    assert pod is not None and pod["metadata"]["ownerReferences"][0]["name"] == "sq"
    job = await h.job("PyTorchJob", ns, "sq")
    assert not is_true(job, "Failed") and job is not None
    assert job["status"]["replicaStatuses"]["Worker"]["restarts"] == 0


async def test_a_succeeded_condition_written_by_someone_else_deletes_no_running_pod(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("status")
    manifest = job_manifest(
        "PyTorchJob", "st", {"Master": 1, "Worker": 2}, run_policy={"cleanPodPolicy": "All"}
    )
    await h.create_job(manifest, ns)
    await h.wait_pods(ns, "st", 3)
    job = await h.wait_condition("PyTorchJob", ns, "st", "Running")
    forged = {"type": "Succeeded", "status": "True", "reason": "JobSucceeded", "message": "forged"}
    job["status"]["conditions"].append(forged)
    await h.kube.replace_status(job_resource("PyTorchJob"), job)
    event = await h.wait_event(ns, "st", "UnverifiedStatus")
    assert "3 still running or pending" in event["message"]
    pods = await h.wait_pods(ns, "st", 3)
    assert all(not p["metadata"].get("deletionTimestamp") for p in pods)
