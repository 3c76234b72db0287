"""The controller against an unreliable API server (devcluster fault injection): an operator
restart mid-job, dropped watches, expired resourceVersions, a 409 on the status write and a
500 on a pod create — no duplicate creates, no lost update."""

from __future__ import annotations

import asyncio

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.apiserver.storage.compaction import Compactor
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import PODS
from kubetrain.operator.controller import Controller

from .controller_support import (
    CONTROLLER_USER_AGENT,
    Harness,
    eventually,
    is_true,
    job_manifest,
    replica_status,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
INTERVAL = 300.0


def pod_creates(h: Harness, ns: str) -> int:
    return h.requests.count(verb="create", resource="pods", user_agent=CONTROLLER_USER_AGENT, namespace=ns)


async def restart_controller(stack: DevStack) -> Controller:
    assert stack.controller is not None
    await stack.controller.stop()
    stack.controller = None
    await stack.start_controller()
    assert stack.controller is not None
    return stack.controller


async def test_operator_restart_mid_job_creates_nothing_twice(env: tuple[DevStack, Harness]) -> None:
    stack, h = env
    ns = await h.namespace("restart")
    await h.create_job(job_manifest("PyTorchJob", "rs", {"Master": 1, "Worker": 3}), ns)
    await h.wait_pods(ns, "rs", 4)
    await h.wait_condition("PyTorchJob", ns, "rs", "Running")
    assert pod_creates(h, ns) == 4

    # While the operator is down: an in-place restart and an eviction happen.
    assert stack.controller is not None
    await stack.controller.stop()
    stack.controller = None
    evicted = await h.pod(ns, "rs-worker-2")
    assert evicted is not None
    await h.sim.restart_container(ns, "rs-worker-0", exit_code=137)
    await h.sim.evict(ns, "rs-worker-2")
    await stack.start_controller()

    # The new operator recreates only the evicted pod, and counts the in-place restart (an
    # eviction is a disruption: recreated without counting, docs/behaviour.md §6).
    await eventually(
        lambda: h.running_pod(ns, "rs-worker-2", not_uid=evicted["metadata"]["uid"]),
        what="rs-worker-2 recreated by the new operator",
    )
    job = await h.wait_job(
        "PyTorchJob",
        ns,
        "rs",
        lambda j: replica_status(j, "Worker").get("restarts") == 1,
        "Worker restarts 1",
    )
    assert not is_true(job, "Failed")
    await h.wait_condition("PyTorchJob", ns, "rs", "Running")
    assert pod_creates(h, ns) == 5

    # A second restart with nothing changed: no create at all, the persisted count survives.
    await restart_controller(stack)
    await asyncio.sleep(0.3)
    assert pod_creates(h, ns) == 5
    await h.sim.finish(ns, "rs-master-0")
    job = await h.wait_condition("PyTorchJob", ns, "rs", "Succeeded")
    assert replica_status(job, "Worker")["restarts"] == 1
    assert pod_creates(h, ns) == 5


async def test_operator_restart_while_creating(env: tuple[DevStack, Harness]) -> None:
    stack, h = env
    ns = await h.namespace("midcreate")
    await h.create_job(job_manifest("TFJob", "mc", {"PS": 2, "Worker": 6}), ns)
    # Stop the operator as soon as its first pod create reaches the API server.
    await eventually(lambda: pod_creates(h, ns) > 0, interval=0.001, what="first pod create")
    assert stack.controller is not None
    await stack.controller.stop()
    stack.controller = None
    # The create that reached the API server lands (it is counted on arrival, stored after).
    await eventually(lambda: h.pods(ns, "mc"), what="the pod whose create reached the API server")
    await stack.start_controller()
    await h.wait_pods(ns, "mc", 8)
    await asyncio.sleep(0.3)
    assert len(await h.pods(ns, "mc")) == 8
    # Each pod was created exactly once: the new operator listed the ones the old one made.
    assert pod_creates(h, ns) == 8, h.requests.summary()


async def test_dropped_watches_lose_no_update(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("drop")
    await h.create_job(job_manifest("PyTorchJob", "dw", {"Master": 1, "Worker": 1}), ns)
    await h.wait_pods(ns, "dw", 2)
    await h.wait_condition("PyTorchJob", ns, "dw", "Running")
    # The watch streams end and the pod finishes while the operator is reconnecting.
    assert h.faults.close_watches() > 0
    await h.sim.finish(ns, "dw-master-0")
    h.faults.close_watches()
    job = await h.wait_condition("PyTorchJob", ns, "dw", "Succeeded")
    assert job["status"]["replicaStatuses"]["Master"]["succeeded"] == 1
    await h.wait_pod_names(ns, "dw", ["dw-master-0"])  # cleanPodPolicy Running saw the worker
    assert pod_creates(h, ns) == 2


async def test_expired_resource_versions_lose_no_update(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("expire")
    await h.create_job(job_manifest("MXJob", "ex", {"Scheduler": 1, "Server": 1, "Worker": 1}), ns)
    await h.wait_pods(ns, "ex", 3)
    await h.wait_condition("MXJob", ns, "ex", "Running")
    # History compacted and streams closed: every informer must relist (410 Gone on re-watch),
    # and changes made meanwhile are found by the relist.
    h.faults.expire_resource_versions()
    h.faults.close_watches()
    await h.kube.delete(PODS, ns, "ex-server-0")
    await eventually(lambda: h.running_pod(ns, "ex-server-0"), what="ex-server-0 recreated after relist")
    h.faults.expire_resource_versions()
    h.faults.close_watches()
    await h.sim.finish(ns, "ex-scheduler-0")
    await h.wait_condition("MXJob", ns, "ex", "Succeeded")
    assert pod_creates(h, ns) == 4


async def test_history_compacted_by_time_under_a_running_operator(env: tuple[DevStack, Harness]) -> None:
    """devcluster compacts its history on a timer as kube-apiserver compacts etcd; a compactor on
    the running cluster's store, driven by a clock the test advances, does that here. The
    operator's open watches are untouched; when they end (as at their timeout) the informers that
    re-watch from a compacted version get 410 and relist, and the job still reconciles."""
    stack, h = env
    wall = FakeClock()
    compactor = Compactor(stack.cluster.store, wall.now, INTERVAL)
    ns = await h.namespace("compact")
    await h.create_job(job_manifest("PyTorchJob", "cp", {"Master": 1, "Worker": 1}), ns)
    await h.wait_pods(ns, "cp", 2)
    await h.wait_condition("PyTorchJob", ns, "cp", "Running")
    lists = h.requests.count(verb="list", user_agent=CONTROLLER_USER_AGENT)
    await wall.advance(INTERVAL)
    assert compactor.poll() == 0  # the first tick records the current version
    recorded = compactor.recorded
    # Seen on the open watches: the operator recreates the deleted pod.
    await h.kube.delete(PODS, ns, "cp-worker-0")
    await eventually(lambda: h.running_pod(ns, "cp-worker-0"), what="cp-worker-0 recreated")
    await wall.advance(INTERVAL)
    assert compactor.poll() == recorded  # every version before the deletion is gone
    h.faults.close_watches()
    await h.sim.finish(ns, "cp-master-0")
    await h.wait_condition("PyTorchJob", ns, "cp", "Succeeded")
    # Informers whose last event predates the compaction could not resume: they relisted.
    assert h.requests.count(verb="list", user_agent=CONTROLLER_USER_AGENT) > lists
    assert pod_creates(h, ns) == 3


async def test_conflict_on_status_write_is_retried(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("conflict")
    rule = h.faults.fail(
        verb="update",
        resource="tfjobs/status",
        namespace=ns,
        status=409,
        count=2,
        message="the object has been modified",
    )
    await h.create_job(job_manifest("TFJob", "cf", {"Worker": 2}), ns)
    job = await h.wait_condition("TFJob", ns, "cf", "Created")
    assert rule.fired == 2
    assert job["status"].get("startTime")
    await h.wait_condition("TFJob", ns, "cf", "Running")
    await h.sim.finish(ns, "cf-worker-0")
    await h.wait_condition("TFJob", ns, "cf", "Succeeded")
    assert pod_creates(h, ns) == 2


async def test_failed_pod_create_is_retried_with_event(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("fail500")
    rule = h.faults.fail(verb="create", resource="pods", namespace=ns, status=500, count=1)
    await h.create_job(job_manifest("PyTorchJob", "f5", {"Master": 1, "Worker": 1}), ns)
    await h.wait_pods(ns, "f5", 2)
    assert rule.fired == 1
    event = await h.wait_event(ns, "f5", "FailedCreatePod")
    assert event["type"] == "Warning"
    assert "f5-" in event["message"]
    await h.wait_condition("PyTorchJob", ns, "f5", "Running")
