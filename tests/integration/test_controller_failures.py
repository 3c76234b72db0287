"""Failures and restarts (docs/behaviour.md §6) through the real controller against devcluster:
ExitCode retryable vs permanent, OnFailure eviction, backoffLimit counting in-place restarts,
a deleted pod recreated, and the Events users see for each."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack

from .controller_support import (
    Harness,
    condition,
    eventually,
    is_true,
    job_manifest,
    replica_status,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_exit_code_retryable_recreates_pod_under_same_name(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("retry")
    manifest = job_manifest("PyTorchJob", "ec", {"Master": 1, "Worker": 2}, restart_policy="ExitCode")
    history = await h.history("PyTorchJob", ns, "ec")
    await h.create_job(manifest, ns)
    pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "ec", 3)}
    assert pods["ec-worker-1"]["spec"]["restartPolicy"] == "Never"  # ExitCode becomes Never on the pod
    await h.wait_condition("PyTorchJob", ns, "ec", "Running")
    old_uid = pods["ec-worker-1"]["metadata"]["uid"]

    await h.sim.finish(ns, "ec-worker-1", exit_code=137)
    job = await history.wait(lambda j: is_true(j, "Restarting"), "Restarting=True")
    cond = condition(job, "Restarting")
    assert cond is not None and cond["reason"] == "JobRestarting"
    assert "137" in cond["message"]
    assert not is_true(job, "Running")  # Running and Restarting replace each other
    assert replica_status(job, "Worker")["restarts"] == 1
    assert replica_status(job, "Master")["restarts"] == 0
    await h.wait_recreated(ns, "ec-worker-1", old_uid)
    event = await h.wait_event(ns, "ec", "JobRestarting")
    assert event["type"] == "Warning"
    assert "ec-worker-1" in event["message"] or "137" in event["message"]
    assert event["involvedObject"]["kind"] == "PyTorchJob"

    # Back to Running once every pod runs again; the restart count stays persisted.
    job = await h.wait_condition("PyTorchJob", ns, "ec", "Running")
    assert not is_true(job, "Restarting")
    assert replica_status(job, "Worker")["restarts"] == 1
    await h.sim.finish(ns, "ec-master-0")
    job = await h.wait_condition("PyTorchJob", ns, "ec", "Succeeded")
    assert replica_status(job, "Worker")["restarts"] == 1
    await history.stop()


async def test_exit_code_permanent_fails_job_naming_pod_container_code(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("perm")
    manifest = job_manifest("TFJob", "perm", {"PS": 1, "Worker": 2}, restart_policy="ExitCode")
    await h.create_job(manifest, ns)
    await h.wait_pods(ns, "perm", 3)
    await h.sim.finish(ns, "perm-worker-1", exit_code=1)
    job = await h.wait_condition("TFJob", ns, "perm", "Failed")
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "PermanentExitCode"
    for part in ("perm-worker-1", "tensorflow", "1"):
        assert part in cond["message"], cond["message"]
    assert not is_true(job, "Running")
    assert job["status"].get("completionTime")
    assert replica_status(job, "Worker").get("restarts", 0) == 0
    event = await h.wait_event(ns, "perm", "PermanentExitCode")
    assert event["type"] == "Warning"
    # The failed pod is not recreated; cleanPodPolicy Running removes the others.
    await h.wait_pod_names(ns, "perm", ["perm-worker-1"])


async def test_never_policy_failure_fails_job(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("never")
    await h.create_job(job_manifest("MXJob", "nv", {"Scheduler": 1, "Server": 1, "Worker": 1}), ns)
    await h.wait_pods(ns, "nv", 3)
    await h.sim.finish(ns, "nv-server-0", exit_code=137)  # restartPolicy Never: even a signal fails it
    job = await h.wait_condition("MXJob", ns, "nv", "Failed")
    assert (condition(job, "Failed") or {})["reason"] == "JobFailed"
    await h.wait_event(ns, "nv", "JobFailed")


async def test_on_failure_evicted_pod_is_recreated(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("evict")
    await h.create_job(job_manifest("PyTorchJob", "ev", {"Master": 1, "Worker": 1}), ns)  # OnFailure default
    pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "ev", 2)}
    await h.wait_condition("PyTorchJob", ns, "ev", "Running")
    await h.sim.evict(ns, "ev-worker-0")
    await h.wait_recreated(ns, "ev-worker-0", pods["ev-worker-0"]["metadata"]["uid"])
    event = await h.wait_event(ns, "ev", "JobRestarting")
    assert "ev-worker-0" in event["message"] and "not counted" in event["message"]
    job = await h.wait_condition("PyTorchJob", ns, "ev", "Running")
    assert not is_true(job, "Failed")
    # A disruption: recreated without counting against backoffLimit (docs/behaviour.md §6).
    assert replica_status(job, "Worker").get("restarts", 0) == 0


async def test_backoff_limit_counts_in_place_restarts(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("backoff")
    manifest = job_manifest("PyTorchJob", "bo", {"Master": 1, "Worker": 2}, run_policy={"backoffLimit": 2})
    await h.create_job(manifest, ns)
    await h.wait_pods(ns, "bo", 3)
    await h.wait_condition("PyTorchJob", ns, "bo", "Running")

    # Two in-place container restarts (the kubelet's, OnFailure): counted, within the limit.
    for n in (1, 2):
        await h.sim.restart_container(ns, "bo-worker-0", exit_code=137)
        job = await h.wait_job(
            "PyTorchJob",
            ns,
            "bo",
            lambda j, n=n: replica_status(j, "Worker").get("restarts") == n,
            f"restarts {n}",
        )
        assert not is_true(job, "Failed")
    # An eviction is a disruption: the pod is recreated without counting.
    evicted = await h.pod(ns, "bo-worker-1")
    assert evicted is not None
    await h.sim.evict(ns, "bo-worker-1")
    await h.wait_recreated(ns, "bo-worker-1", evicted["metadata"]["uid"])
    job = await h.wait_condition("PyTorchJob", ns, "bo", "Running")
    assert replica_status(job, "Worker").get("restarts") == 2 and not is_true(job, "Failed")
    # A third in-place restart is over the limit of 2.
    await h.sim.restart_container(ns, "bo-worker-0", exit_code=137)
    job = await h.wait_condition("PyTorchJob", ns, "bo", "Failed")
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "BackoffLimitExceeded"
    assert "backoffLimit of 2" in cond["message"]
    # Every running pod is deleted.
    await h.wait_job("PyTorchJob", ns, "bo", lambda j: is_true(j, "Failed"), "Failed stays")
    await eventually(lambda: _no_running(h, ns, "bo"), what="no Running pods of the failed job")
    await h.wait_event(ns, "bo", "BackoffLimitExceeded")
    reasons = await h.event_reasons(ns, "bo")
    assert "JobRestarting" in reasons


async def test_backoff_limit_exceeded_by_in_place_restarts_alone(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("inplace")
    await fail_master_twice(h, ns, "ip", {"backoffLimit": 1})
    await h.wait_pod_names(ns, "ip", [])


async def fail_master_twice(h: Harness, ns: str, name: str, run_policy: dict[str, Any]) -> None:
    """Create a PyTorchJob `name` (a Master, a Worker) under `run_policy` (backoffLimit 1), fail its
    Master's container twice in place and wait until the job is Failed, BackoffLimitExceeded."""
    manifest = job_manifest("PyTorchJob", name, {"Master": 1, "Worker": 1}, run_policy=run_policy)
    await h.create_job(manifest, ns)
    await h.wait_condition("PyTorchJob", ns, name, "Running")
    await h.sim.restart_container(ns, f"{name}-master-0", exit_code=1)
    await h.wait_job(
        "PyTorchJob", ns, name, lambda j: replica_status(j, "Master").get("restarts") == 1, "1 restart"
    )
    await h.sim.restart_container(ns, f"{name}-master-0", exit_code=1)
    job = await h.wait_condition("PyTorchJob", ns, name, "Failed")
    assert (condition(job, "Failed") or {})["reason"] == "BackoffLimitExceeded"


async def test_backoff_limit_failure_keeps_pods_under_clean_pod_policy_none(
    env: tuple[DevStack, Harness],
) -> None:
    """Kubeflow Trainer #3419: `cleanPodPolicy: None` keeps a job's pods when it fails on its
    backoffLimit, so the crashing container's logs can still be read."""
    _, h = env
    ns = await h.namespace("keep")
    await fail_master_twice(h, ns, "kp", {"backoffLimit": 1, "cleanPodPolicy": "None"})
    await h.wait_event(ns, "kp", "BackoffLimitExceeded")
    # The reconcile that wrote Failed issued its deletions before the status: none were made.
    pods = {p["metadata"]["name"]: p for p in await h.pods(ns, "kp")}
    assert sorted(pods) == ["kp-master-0", "kp-worker-0"]
    assert not [n for n, p in pods.items() if p["metadata"].get("deletionTimestamp")]
    master = pods["kp-master-0"]["status"]["containerStatuses"][0]
    assert master["restartCount"] == 2
    assert await h.service(ns, "kp") is not None  # None keeps the Service too


async def _no_running(h: Harness, ns: str, job_name: str) -> bool:
    pods = await h.pods(ns, job_name)
    return not [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") in ("Running", "Pending")
    ]


async def test_deleted_pod_is_recreated_while_running(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("del")
    await h.create_job(job_manifest("TFJob", "dp", {"Chief": 1, "Worker": 2}), ns)
    pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "dp", 3)}
    await h.wait_condition("TFJob", ns, "dp", "Running")
    from kubetrain.kube.resources import PODS

    await h.kube.delete(PODS, ns, "dp-worker-1")
    pod = await h.wait_recreated(ns, "dp-worker-1", pods["dp-worker-1"]["metadata"]["uid"])
    assert pod["metadata"]["labels"]["kubetrain.io/replica-index"] == "1"  # type: ignore[index]
    await h.wait_condition("TFJob", ns, "dp", "Running")
    job = await h.job("TFJob", ns, "dp")
    assert not is_true(job, "Failed")


async def test_deleted_succeeded_worker_is_not_made_again(env: tuple[DevStack, Harness]) -> None:
    """A Worker that finished and whose pod is then deleted (its node removed, a drain) is not
    run again: its index stays in status.completedIndexes, and the job still completes."""
    _, h = env
    ns = await h.namespace("done")
    await h.create_job(job_manifest("TFJob", "dw", {"Chief": 1, "Worker": 2}, restart_policy="Never"), ns)
    pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "dw", 3)}
    await h.wait_condition("TFJob", ns, "dw", "Running")
    await h.sim.finish(ns, "dw-worker-1")
    await h.wait_job(
        "TFJob",
        ns,
        "dw",
        lambda j: j["status"].get("completedIndexes") == {"Worker": "1"},
        "worker 1 recorded",
    )
    from kubetrain.kube.resources import PODS

    await h.kube.delete(PODS, ns, "dw-worker-1")
    # A pod deleted after it: the reconcile that makes it again has seen worker 1 gone too.
    await h.kube.delete(PODS, ns, "dw-worker-0")
    await h.wait_recreated(ns, "dw-worker-0", pods["dw-worker-0"]["metadata"]["uid"])
    assert await h.pod(ns, "dw-worker-1") is None
    job = await h.wait_job(
        "TFJob", ns, "dw", lambda j: replica_status(j, "Worker").get("active") == 1, "worker 0 running again"
    )
    assert replica_status(job, "Worker").get("succeeded") == 1
    await h.sim.finish(ns, "dw-chief-0")
    done = await h.wait_condition("TFJob", ns, "dw", "Succeeded")
    assert await h.pod(ns, "dw-worker-1") is None
    assert replica_status(done, "Worker").get("succeeded") == 1
    assert done["status"]["completedIndexes"] == {"Chief": "0", "Worker": "1"}
