"""Simulated pods that report their training progress through the real path: the simulated
kubelet, acting as the pod's rank-0 process, reads the pod-bound projected token and the CA the
devcluster issued for the pod and POSTs the SDK's wire format to the URL in the pod's env; the
endpoint authenticates it (TokenReview) and `status.trainerStatus` moves with the pod's
run-seconds. The kubelet runs on a FakeClock: its reports are paced by advancing it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.kubelet.behaviour import REPORT_PROGRESS, RUN_SECONDS
from kubetrain.kube.clock import FakeClock

from .controller_support import Harness, job_manifest, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
CLOCK = FakeClock()
INTERVAL = 5.0  # the SDK's throttle, on the kubelet's fake clock


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for pair in open_stack(
        progress=True, progress_interval=0.05, simulator_clock=CLOCK, report_interval=INTERVAL
    ):
        yield pair


@pytest.fixture
def h(env: tuple[DevStack, Harness]) -> Harness:
    return env[1]


def trainer_status(job: Obj | None) -> Obj:
    return dict(((job or {}).get("status") or {}).get("trainerStatus") or {})


async def start(h: Harness, name: str, pod_annotations: dict[str, dict[str, str]]) -> str:
    ns = await h.namespace("simprogress")
    await h.create_job(
        job_manifest("PyTorchJob", name, {"Master": 1, "Worker": 2}, pod_annotations=pod_annotations), ns
    )
    await h.wait_pods(ns, name, 3)
    for pod in (f"{name}-master-0", f"{name}-worker-0", f"{name}-worker-1"):
        await h.sim.wait_for_phase(ns, pod, "Running")
    return ns


async def stored(h: Harness, ns: str, name: str, pred: Any, what: str) -> Obj:
    job = await h.wait_job("PyTorchJob", ns, name, lambda j: pred(trainer_status(j)), what)
    return trainer_status(job)


async def test_the_annotated_rank0_pod_reports_rising_progress_falling_loss_and_an_eta(h: Harness) -> None:
    annotated = {REPORT_PROGRESS: "true", RUN_SECONDS: "20"}
    ns = await start(h, "sim", {"Master": annotated, "Worker": annotated})
    first = await stored(h, ns, "sim", lambda s: "progressPercentage" in s, "the first report")
    assert first["progressPercentage"] == 0 and first["estimatedRemainingSeconds"] == 20
    metrics = {m["name"]: float(m["value"]) for m in first["metrics"]}
    assert metrics["loss"] == pytest.approx(2.3)

    await CLOCK.advance(INTERVAL)  # the next report is due 5 s (of the pod's run) later
    later = await stored(h, ns, "sim", lambda s: s.get("progressPercentage") == 25, "25 % after 5 of 20 s")
    assert later["estimatedRemainingSeconds"] == 15
    assert {m["name"]: float(m["value"]) for m in later["metrics"]}["loss"] < metrics["loss"]
    await CLOCK.advance(INTERVAL)
    await stored(h, ns, "sim", lambda s: s.get("progressPercentage") == 50, "50 % after 10 of 20 s")

    # Only rank 0 reports (master-0: worker-0 has replica index 0 but RANK 1), and its reports
    # were accepted by the endpoint: the token, its audience and the pod claims were right.
    assert h.sim.report_statuses[(ns, "sim-master-0")] == 200
    assert (ns, "sim-worker-0") not in h.sim.report_statuses
    assert (ns, "sim-worker-1") not in h.sim.report_statuses


async def test_a_pod_without_the_annotation_reports_nothing(h: Harness) -> None:
    ns = await start(h, "silent", {"Master": {RUN_SECONDS: "20"}})
    await CLOCK.advance(INTERVAL)
    assert h.stack.progress is not None
    await h.stack.progress.flush()
    job = await h.job("PyTorchJob", ns, "silent")
    assert trainer_status(job) == {}
    assert not [k for k in h.sim.report_statuses if k[0] == ns]


async def test_reporting_stops_when_the_pod_finishes(h: Harness) -> None:
    ns = await start(h, "ends", {"Master": {REPORT_PROGRESS: "true", RUN_SECONDS: "30"}})
    await stored(h, ns, "ends", lambda s: "progressPercentage" in s, "the first report")
    await h.finish_all(ns, "ends")
    await h.wait_condition("PyTorchJob", ns, "ends", "Succeeded")
    sent = h.sim.report_counts[(ns, "ends-master-0")]
    assert h.sim.report_statuses[(ns, "ends-master-0")] == 200
    for _ in range(3):
        await CLOCK.advance(INTERVAL)
    # The finished pod's training code is gone: no report after its containers stopped.
    assert h.sim.report_counts[(ns, "ends-master-0")] == sent


async def test_a_pod_whose_training_succeeds_reports_100_percent_before_it_exits(h: Harness) -> None:
    ns = await start(h, "done", {"Master": {REPORT_PROGRESS: "true", RUN_SECONDS: "12"}})
    await stored(h, ns, "done", lambda s: s.get("progressPercentage") == 0, "the first report")
    await CLOCK.advance(INTERVAL)
    await CLOCK.advance(INTERVAL)
    await stored(h, ns, "done", lambda s: s.get("progressPercentage") == 83, "83 % after 10 of 12 s")
    sent = h.sim.report_counts[(ns, "done-master-0")]
    await CLOCK.advance(2)  # the run ends at 12 s, before the next periodic report is due
    final = await stored(h, ns, "done", lambda s: s.get("progressPercentage") == 100, "100 % at the end")
    assert final["estimatedRemainingSeconds"] == 0
    assert h.sim.report_counts[(ns, "done-master-0")] == sent + 1
    assert h.sim.report_statuses[(ns, "done-master-0")] == 200
    await h.sim.wait_for_phase(ns, "done-master-0", "Succeeded")
