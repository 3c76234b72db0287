"""A runtime's replicated job `activeDeadlineSeconds`, through the controller on a FakeClock:
the Job's start is recorded in the run's record when its pods are made, and the Job fails at
its deadline's exact instant (reason DeadlineExceeded), failing the TrainJob as JobSet's
default would with no failure policy. No real time is slept for the deadline."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS
from kubetrain.operator.status import parse_time

from .controller_support import Harness, advance_to, eventually, open_clocked_stack, ticking
from .test_trainjob_controller import get_tj, training_runtime, trainjob

pytestmark = pytest.mark.asyncio(loop_scope="module")

START = datetime.now(UTC).replace(microsecond=0)
QUIET = 0.3  # real seconds to watch for something that must NOT happen


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    async for triple in open_clocked_stack(START, api_groups=("kubetrain.io", "trainer.kubeflow.org")):
        yield triple


def failed(tj: dict[str, object]) -> dict[str, str] | None:
    conditions = (tj.get("status") or {}).get("conditions") or []  # type: ignore[attr-defined]
    return next((c for c in conditions if c["type"] == "Failed" and c["status"] == "True"), None)


async def test_a_job_fails_at_its_own_deadline(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await h.namespace("jobdeadline")
    runtime = training_runtime("deadline")
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"] = (
        600
    )
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    job = trainjob("dl", num_nodes=2, runtime="deadline", runtime_kind="TrainingRuntime")
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    await ticking(clock, lambda: h.wait_pods(ns, "dl", 2))

    async def start_time() -> datetime | None:
        snapshot = await h.get(CONFIG_MAPS, ns, "dl-runtime-snapshot")
        state = json.loads(((snapshot or {}).get("data") or {}).get("state") or "{}")
        return parse_time((state.get("jobStartTimes") or {}).get("node"))

    started = await ticking(clock, lambda: eventually(start_time, what="the node Job's start recorded"))
    deadline = started + timedelta(seconds=600)

    await advance_to(clock, deadline - timedelta(seconds=1))
    await asyncio.sleep(QUIET)
    assert failed(await get_tj(h, ns, "dl")) is None
    assert len(await h.wait_pods(ns, "dl", 2)) == 2

    await advance_to(clock, deadline)

    async def trainjob_failed() -> dict[str, str] | None:
        return failed(await get_tj(h, ns, "dl"))

    cond = await ticking(clock, lambda: eventually(trainjob_failed, what="TrainJob dl Failed"))
    assert cond["reason"] == "FailedJobs"
    assert cond["message"].endswith("(first failed job: dl-node-0)")
    event = await h.wait_event(ns, "dl", "DeadlineExceeded")
    assert event["type"] == "Warning"
    assert event["message"] == "Job dl-node-0: Job was active longer than specified deadline"
    await h.wait_pod_names(ns, "dl", [])  # its running pods deleted
