"""Stall detection with a FakeClock injected into the controller and the progress endpoint: a
Running job that reported and then went quiet past its progress deadline is Stalled, then
restarted as a new attempt (counted against backoffLimit) or failed; a job or a run that never
reported is never stalled. No real time is slept for a deadline."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from kubetrain.api import trainerstatus as ts
from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.clock import FakeClock

from .controller_support import (
    Harness,
    condition,
    eventually,
    is_true,
    job_manifest,
    open_clocked_stack,
    pod_env,
    ticking,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

START = datetime.now(UTC).replace(microsecond=0)
QUIET = 0.3  # real seconds to watch for something that must NOT happen


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    async for triple in open_clocked_stack(START, progress=True, progress_interval=0.001):
        yield triple


async def report(h: Harness, ns: str, pod: str, percent: int) -> int:
    files = await h.sim.files(ns, pod)
    live = await h.pod(ns, pod)
    assert live is not None
    url = pod_env(live)[ts.ENV_URL]
    ctx = ssl.create_default_context(cadata=files[f"{ts.MOUNT_PATH}/{ts.CA_FILE}"])
    token = files[f"{ts.MOUNT_PATH}/{ts.TOKEN_FILE}"]
    body = json.dumps({"trainerStatus": {"progressPercentage": percent}})
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers, ssl=ctx) as resp,
    ):
        return resp.status


def reported(percent: int) -> Callable[[dict[str, Any]], bool]:
    return lambda j: ((j.get("status") or {}).get("trainerStatus") or {}).get("progressPercentage") == percent


async def running_job(h: Harness, clock: FakeClock, name: str, policy: str, **run_policy: Any) -> str:
    ns = await h.namespace("stall")
    job = job_manifest("PyTorchJob", name, {"Master": 1}, restart_policy=policy, run_policy=run_policy)
    await h.create_job(job, ns)
    await ticking(clock, lambda: h.wait_pods(ns, name, 1))
    await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, name, "Running"))
    return ns


async def test_a_quiet_job_is_stalled_and_restarted_as_a_new_attempt(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    _, h, clock = env
    ns = await running_job(h, clock, "quiet", "OnFailure", progressDeadlineSeconds=60, backoffLimit=3)
    assert await report(h, ns, "quiet-master-0", 30) == 200
    await ticking(clock, lambda: h.wait_job("PyTorchJob", ns, "quiet", reported(30), "30% stored"))
    await clock.advance(59)
    await asyncio.sleep(QUIET)
    job = await h.job("PyTorchJob", ns, "quiet")
    assert not is_true(job, "Stalled")
    await clock.advance(1.5)
    job = await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "quiet", "Stalled"))
    stalled = condition(job, "Stalled")
    assert stalled is not None and stalled["reason"] == "ProgressDeadlineExceeded"
    assert "no progress for 60s" in stalled["message"] and "at 30%" in stalled["message"]
    assert job["status"]["jobRestarts"] == 1
    assert job["status"]["replicaStatuses"]["Master"]["restarts"] == 1  # counts against backoffLimit
    assert "ProgressDeadlineExceeded" in await h.event_reasons(ns, "quiet")

    # The new attempt runs; it has not reported, so it is never called stalled.
    async def new_attempt_running() -> bool:
        pods = await h.pods(ns, "quiet")
        return any(
            p["metadata"].get("labels", {}).get("kubetrain.io/attempt") == "1"
            and (p.get("status") or {}).get("phase") == "Running"
            for p in pods
        )

    await ticking(clock, lambda: eventually(new_attempt_running, what="attempt 1 running"))
    await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "quiet", "Running"))
    await clock.advance(600)
    await asyncio.sleep(QUIET)
    job = await h.job("PyTorchJob", ns, "quiet")
    assert job is not None and job["status"]["jobRestarts"] == 1
    # It reports again: Stalled turns False.
    assert await report(h, ns, "quiet-master-0", 35) == 200
    job = await ticking(clock, lambda: h.wait_job("PyTorchJob", ns, "quiet", reported(35), "35%"))
    job = await ticking(
        clock,
        lambda: h.wait_job("PyTorchJob", ns, "quiet", lambda j: not is_true(j, "Stalled"), "not stalled"),
    )
    assert condition(job, "Stalled")["reason"] == "ProgressReported"  # type: ignore[index]


async def test_a_quiet_job_that_may_not_restart_fails(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await running_job(h, clock, "never", "Never", progressDeadlineSeconds=30)
    assert await report(h, ns, "never-master-0", 80) == 200
    await ticking(clock, lambda: h.wait_job("PyTorchJob", ns, "never", reported(80), "80% stored"))
    await clock.advance(31)
    job = await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "never", "Failed"))
    assert condition(job, "Failed")["reason"] == "ProgressDeadlineExceeded"  # type: ignore[index]
    assert is_true(job, "Stalled")


async def test_the_annotation_declares_it_and_a_silent_job_is_never_stalled(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    _, h, clock = env
    ns = await h.namespace("stall")
    job = job_manifest(
        "PyTorchJob",
        "silent",
        {"Master": 1},
        restart_policy="OnFailure",
        annotations={ts.ANNOTATION_DEADLINE: "10"},
    )
    await h.create_job(job, ns)
    await ticking(clock, lambda: h.wait_condition("PyTorchJob", ns, "silent", "Running"))
    await clock.advance(3600)
    await asyncio.sleep(QUIET)
    stored = await h.job("PyTorchJob", ns, "silent")
    assert stored is not None and not is_true(stored, "Stalled") and not stored["status"].get("jobRestarts")


async def test_a_bad_deadline_annotation_is_refused(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, _ = env
    ns = await h.namespace("stall")
    job = job_manifest("PyTorchJob", "bad", {"Master": 1}, annotations={ts.ANNOTATION_DEADLINE: "soon"})
    with pytest.raises(
        ApiError, match=r"progress-deadline-seconds\]: Invalid: must be a positive integer number of seconds"
    ):
        await h.create_job(job, ns)
