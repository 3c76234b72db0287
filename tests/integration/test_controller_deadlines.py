"""Time-driven run policy (docs/behaviour.md §7) with a FakeClock injected into the controller:
activeDeadlineSeconds fires exactly at the deadline with no other event, TTL deletes the job
and (through devcluster's garbage collector) its children, suspend/resume resets startTime.
No real time is slept for a deadline: the test advances the controller's clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import job_resource
from kubetrain.operator.status import parse_time

from .controller_support import (
    Harness,
    advance_to,
    condition,
    eventually,
    is_true,
    job_manifest,
    open_clocked_stack,
    replica_status,
    ticking,
)

PYTORCHJOBS = job_resource("PyTorchJob")
TFJOBS = job_resource("TFJob")

pytestmark = pytest.mark.asyncio(loop_scope="module")

START = datetime.now(UTC).replace(microsecond=0)
QUIET = 0.3  # real seconds to watch for something that must NOT happen (negative checks)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    async for triple in open_clocked_stack(START):
        yield triple


async def test_active_deadline_fires_exactly_at_deadline(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await h.namespace("ads")
    manifest = job_manifest(
        "PyTorchJob", "ads", {"Master": 1, "Worker": 2}, run_policy={"activeDeadlineSeconds": 600}
    )
    await h.create_job(manifest, ns)
    await ticking(clock, lambda: h.wait_pods(ns, "ads", 3))
    job = await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "ads", "Running"))
    started = parse_time(job["status"]["startTime"])
    assert started is not None
    deadline = started + timedelta(seconds=600)
    assert clock.now() < deadline - timedelta(seconds=1)

    # One second before the deadline: nothing happens (pods run forever; no other event comes).
    await advance_to(clock, deadline - timedelta(seconds=1))
    await asyncio.sleep(QUIET)
    job = await h.job("PyTorchJob", ns, "ads")
    assert not is_true(job, "Failed") and is_true(job, "Running")
    assert len(await h.wait_pods(ns, "ads", 3)) == 3

    # At the deadline exactly: the controller's own wake-up fails the job. The wait ticks the fake
    # clock by milliseconds (still within the deadline's second) so that a retried write's
    # back-off, which runs on the same fake clock, can fire on a loaded machine.
    await advance_to(clock, deadline)
    job = await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "ads", "Failed"))
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "DeadlineExceeded"
    assert "activeDeadlineSeconds" in cond["message"]
    assert parse_time(job["status"]["completionTime"]) == deadline
    await h.wait_pod_names(ns, "ads", [])  # all active pods deleted
    event = await h.wait_event(ns, "ads", "DeadlineExceeded")
    assert event["type"] == "Warning"


async def test_ttl_deletes_job_and_children_at_expiry(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await h.namespace("ttl")
    # cleanPodPolicy None keeps pods and Service after success: only the TTL removes them.
    manifest = job_manifest(
        "TFJob",
        "ttl",
        {"Chief": 1, "PS": 1},
        run_policy={"ttlSecondsAfterFinished": 300, "cleanPodPolicy": "None"},
    )
    await h.create_job(manifest, ns)
    await ticking(clock, lambda: h.wait_pods(ns, "ttl", 2))
    await h.sim.finish(ns, "ttl-chief-0")
    job = await ticking(clock, lambda: h.wait_condition("TFJob", ns, "ttl", "Succeeded"))
    completed = parse_time(job["status"]["completionTime"])
    assert completed is not None
    expiry = completed + timedelta(seconds=300)

    await advance_to(clock, expiry - timedelta(seconds=1))
    await asyncio.sleep(QUIET)
    assert await h.job("TFJob", ns, "ttl") is not None
    assert len(await h.pods(ns, "ttl")) == 2

    await advance_to(clock, expiry)
    await eventually(lambda: h.absent(TFJOBS, ns, "ttl"), what="TFJob deleted at its TTL")
    # devcluster's garbage collector deletes the children through their ownerReferences.
    await eventually(lambda: _children_gone(h, ns, "ttl"), what="pods and Service garbage-collected")


async def _children_gone(h: Harness, ns: str, name: str) -> bool:
    return not await h.pods(ns, name) and await h.service(ns, name) is None


async def test_suspend_and_resume(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await h.namespace("susp")
    history = await h.history("PyTorchJob", ns, "susp")
    await h.create_job(job_manifest("PyTorchJob", "susp", {"Master": 1, "Worker": 1}), ns)
    first = {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in await ticking(clock, lambda: h.wait_pods(ns, "susp", 2))
    }
    job = await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "susp", "Running"))
    first_start = parse_time(job["status"]["startTime"])

    await h.kube.patch(PYTORCHJOBS, ns, "susp", {"spec": {"runPolicy": {"suspend": True}}})
    job = await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "susp", "Suspended"))
    cond = condition(job, "Suspended")
    assert cond is not None and cond["reason"] == "JobSuspended"
    await ticking(clock, lambda: h.wait_pod_names(ns, "susp", []))
    job = await ticking(
        clock,
        lambda: h.wait_job(
            "PyTorchJob",
            ns,
            "susp",
            lambda j: (
                replica_status(j, "Master").get("active") == 0
                and replica_status(j, "Worker").get("active") == 0
            ),
            "active counts 0 while suspended",
        ),
    )
    assert not is_true(job, "Running")
    await h.wait_event(ns, "susp", "JobSuspended")

    # Suspended for 100 s: no pods come back, and resuming restarts the clock of the job.
    await clock.advance(100)
    await asyncio.sleep(QUIET)
    assert await h.pods(ns, "susp") == []
    await h.kube.patch(PYTORCHJOBS, ns, "susp", {"spec": {"runPolicy": {"suspend": False}}})
    job = await ticking(
        clock,
        lambda: history.wait(lambda j: (condition(j, "Suspended") or {}).get("status") == "False", "resumed"),
    )
    cond = condition(job, "Suspended")
    assert cond is not None and cond["reason"] == "JobResumed"
    resumed_start = parse_time(job["status"].get("startTime"))
    assert first_start is not None and resumed_start is not None
    assert resumed_start >= first_start + timedelta(seconds=100), (first_start, resumed_start)
    pods = await ticking(clock, lambda: h.wait_pods(ns, "susp", 2))
    assert all(p["metadata"]["uid"] != first[p["metadata"]["name"]] for p in pods)  # recreated
    await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "susp", "Running"))
    await h.wait_event(ns, "susp", "JobResumed")
    await history.stop()
