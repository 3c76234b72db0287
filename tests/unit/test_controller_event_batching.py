"""How informer events reach the work queue: pod status changes and status-only job updates are
coalesced per job (a window proportional to the job's last decision time), everything that
must act at once (spec/metadata changes, the pod event completing a create wave) is not."""

from __future__ import annotations

from typing import Any, cast

from pods import watched_pod

from kubetrain.kube.client import KubeClient
from kubetrain.kube.resources import JOB_RESOURCES
from kubetrain.operator.controller import Controller, ControllerConfig
from kubetrain.operator.jobevents import CLOSED_NAMESPACE_WINDOW

KEY = "PyTorchJob/ns/big"


def job(rv: str, generation: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "big",
            "namespace": "ns",
            "uid": "u1",
            "generation": generation,
            "resourceVersion": rv,
            **meta,
        },
        "spec": {},
        "status": {"active": int(rv)},
    }


def pod(name: str, rv: str, phase: str = "Pending") -> dict[str, Any]:
    return watched_pod(name, rv, {"phase": phase})


def controller(factor: float = 50.0, cap: float = 1.0) -> Controller:
    c = Controller(cast(KubeClient, None), ControllerConfig(event_batch_factor=factor, event_batch_max=cap))
    c._decision_seconds[KEY] = 0.01  # the job's last decision took 10 ms
    return c


async def test_window_follows_the_jobs_decision_time_up_to_the_cap() -> None:
    c = controller()
    assert c.batch_window(KEY) == 0.5  # 50 x 10 ms
    c._decision_seconds[KEY] = 0.2
    assert c.batch_window(KEY) == 1.0
    assert c.batch_window("PyTorchJob/ns/never-planned") == 0.0  # unknown job: at once


async def test_pod_status_changes_of_a_job_are_coalesced() -> None:
    c = controller()
    for i in range(100):
        c._pod_updated(pod(f"big-worker-{i}", "1"), pod(f"big-worker-{i}", "2", "Running"))
    assert c.queue.is_batched(KEY)
    assert len(c.queue) == 0
    c._pod_updated(pod("big-worker-0", "2"), pod("big-worker-0", "2"))  # no change: ignored
    c.queue.shutdown()


async def test_status_only_job_update_is_batched_spec_or_metadata_change_is_not() -> None:
    c = controller()
    c._job_updated(job("1"), job("2"))
    assert c.queue.is_batched(KEY) and len(c.queue) == 0
    c._job_updated(job("2"), job("3", generation=2))  # spec changed
    assert len(c.queue) == 1 and not c.queue.is_batched(KEY)

    d = controller()
    d._job_updated(job("1"), job("2", deletionTimestamp="2026-01-01T00:00:00Z"))
    assert len(d.queue) == 1
    e = controller()
    e._job_updated(job("1"), job("2", labels={"team": "a"}))
    assert len(e.queue) == 1
    for q in (c.queue, d.queue, e.queue):
        q.shutdown()


async def test_the_pod_event_completing_a_create_wave_enqueues_at_once() -> None:
    c = controller()
    c.expectations.expect_creations(KEY, ["big-worker-0", "big-worker-1"])
    c._pod_added(pod("big-worker-0", "1"))
    assert len(c.queue) == 0  # still one to come: nothing to do yet
    c._pod_added(pod("big-worker-1", "1"))
    assert len(c.queue) == 1  # the wave is complete: plan the next step now
    c.queue.shutdown()


async def test_an_unexpected_pod_deletion_is_batched_not_dropped() -> None:
    c = controller()
    c._pod_deleted(pod("big-worker-3", "5", "Running"))
    assert c.queue.is_batched(KEY)
    c.queue.shutdown()


async def test_deleting_the_job_forgets_its_decision_time() -> None:
    c = controller()
    c._job_deleted(job("9"))
    assert c.batch_window(KEY) == 0.0
    c.queue.shutdown()


async def test_a_job_in_a_namespace_being_deleted_is_batched_over_the_long_window() -> None:
    c = controller()
    c.applier.closed_namespaces["ns"] = set()
    assert c.batch_window(KEY) == CLOSED_NAMESPACE_WINDOW
    c.applier.namespace_accepts_creates("ns")  # a job was added there again
    assert c.batch_window(KEY) == 0.5


async def test_a_closed_namespace_is_forgotten_with_its_last_job() -> None:
    c = controller()
    other = job("3")
    other["metadata"]["name"] = "other"
    c.cache.store(JOB_RESOURCES["PyTorchJob"]).upsert(other)
    c.applier.closed_namespaces["ns"] = {"u1"}
    c._job_deleted(job("9"))
    assert "ns" in c.applier.closed_namespaces  # another job of the namespace is still there
    c.cache.store(JOB_RESOURCES["PyTorchJob"]).remove("ns", "other")
    c._job_deleted(other)
    assert "ns" not in c.applier.closed_namespaces
    c.queue.shutdown()
