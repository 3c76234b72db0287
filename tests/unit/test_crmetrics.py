"""controller-runtime's standard series (kubetrain.serving.crmetrics) as a scrape shows them: the
controller series after reconciles that succeed, ask for a wake-up, fail on the API and fail on a
bug; client-go's work queue series on an injected clock; the webhook series of requests answered
200, refused 400 and failing 500; the `controller` names the replaced operators used."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import generate_latest

from kubetrain.kube.client import ApiError
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator.controllernames import cron_controller, job_controller, job_resource_controller
from kubetrain.operator.loop import ReconcileLoop
from kubetrain.serving.crmetrics import EXPONENTIAL_BUCKETS
from kubetrain.serving.metrics import REGISTRY
from kubetrain.webhook.requestmetrics import instrumented


def scrape() -> set[str]:
    return set(generate_latest(REGISTRY).decode().splitlines())


class _Recorder:
    async def flush(self) -> None:
        pass


class Loop(ReconcileLoop):
    """Keys `<prefix>/<name>`; each prefix is its own controller; what a reconcile does is the
    `behaviour` given for the key's name."""

    log = logging.getLogger("test.crloop")

    def __init__(self, clock: FakeClock, behaviour: dict[str, Callable[[Loop, str], None]]) -> None:
        self.queue = WorkQueue(name="crtest-loop", clock=clock)
        self.informers: list[Any] = []
        self.recorder: Any = _Recorder()
        self._workers = []
        self.behaviour = behaviour
        self.active_seen: list[float] = []
        self.finished: list[str] = []

    def controller_of(self, prefix: str) -> str:
        return f"{prefix}-controller"

    def key_prefixes(self) -> list[str]:
        return ["crtest-idle", "crtest-busy"]

    async def reconcile(self, key: str) -> None:
        self.active_seen.append(
            REGISTRY.get_sample_value(
                "controller_runtime_active_workers", {"controller": "crtest-busy-controller"}
            )
            or 0.0
        )
        try:
            self.behaviour[key.split("/")[1]](self, key)
        finally:
            self.finished.append(key)


def _requeue_after(loop: Loop, key: str) -> None:
    loop.queue.add_after(key, 30)


def _api_error(loop: Loop, key: str) -> None:
    raise ApiError(409, "Conflict", "stale")


def _bug(loop: Loop, key: str) -> None:
    raise KeyError("spec")


async def test_controller_series_after_success_requeue_after_error_and_bug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.CRITICAL, logger="test.crloop")
    clock = FakeClock()
    loop = Loop(
        clock, {"ok": lambda lp, k: None, "wake": _requeue_after, "conflict": _api_error, "bug": _bug}
    )
    loop.start_workers(3, "crtest worker")
    for name in ("ok", "wake", "conflict", "bug"):
        loop.queue.add(f"crtest-busy/{name}")
    for _ in range(100):
        if len(loop.finished) == 4:
            break
        await asyncio.sleep(0)
    await loop.stop_workers()
    assert len(loop.finished) == 4
    lines = scrape()
    busy, idle = 'controller="crtest-busy-controller"', 'controller="crtest-idle-controller"'
    for expected in (
        f'controller_runtime_reconcile_total{{{busy},result="success"}} 1.0',
        f'controller_runtime_reconcile_total{{{busy},result="requeue_after"}} 1.0',
        f'controller_runtime_reconcile_total{{{busy},result="error"}} 2.0',
        f'controller_runtime_reconcile_total{{{busy},result="requeue"}} 0.0',
        f"controller_runtime_reconcile_errors_total{{{busy}}} 2.0",
        f"controller_runtime_reconcile_panics_total{{{busy}}} 1.0",  # the KeyError, not the 409
        f"controller_runtime_terminal_reconcile_errors_total{{{busy}}} 0.0",
        f"controller_runtime_reconcile_time_seconds_count{{{busy}}} 4.0",
        f'controller_runtime_reconcile_time_seconds_bucket{{{busy},le="60.0"}} 4.0',
        f"controller_runtime_max_concurrent_reconciles{{{busy}}} 3.0",
        f"controller_runtime_active_workers{{{busy}}} 0.0",
        # A served controller that reconciled nothing is there from the start, at 0.
        f'controller_runtime_reconcile_total{{{idle},result="success"}} 0.0',
        f"controller_runtime_reconcile_errors_total{{{idle}}} 0.0",
        f"controller_runtime_max_concurrent_reconciles{{{idle}}} 3.0",
    ):
        assert expected in lines
    assert min(loop.active_seen) >= 1.0  # the reconcile counted itself while it ran


async def test_work_queue_series_follow_client_go() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(name="crtest-queue", clock=clock)
    lbl = 'controller="crtest-queue",name="crtest-queue"'  # exposition sorts label names
    queue.add("a")
    queue.add("a")  # deduplicated: not an add
    await clock.advance(1.0)
    queue.add("b")
    await clock.advance(2.0)
    assert f"workqueue_adds_total{{{lbl}}} 2.0" in scrape()
    assert f"workqueue_depth{{{lbl}}} 2.0" in scrape()
    assert await queue.get() == "a"  # waited 3 s
    assert await queue.get() == "b"  # waited 2 s
    queue.add("a")  # re-added while processing: waits too, counted in the depth
    await clock.advance(4.0)
    lines = scrape()
    assert f"workqueue_depth{{{lbl}}} 1.0" in lines
    assert f"workqueue_queue_duration_seconds_count{{{lbl}}} 2.0" in lines
    assert f"workqueue_queue_duration_seconds_sum{{{lbl}}} 5.0" in lines
    assert (
        'workqueue_queue_duration_seconds_bucket{controller="crtest-queue",le="1.0",name="crtest-queue"} 0.0'
        in lines
    )
    assert (
        'workqueue_queue_duration_seconds_bucket{controller="crtest-queue",le="10.0",name="crtest-queue"} 2.0'
        in lines
    )
    assert f"workqueue_unfinished_work_seconds{{{lbl}}} 8.0" in lines  # a and b, 4 s each
    assert f"workqueue_longest_running_processor_seconds{{{lbl}}} 4.0" in lines
    queue.done("b")
    queue.done("a")  # a is handed out again: its wait started at its re-add, 4 s ago
    assert await queue.get() == "a"
    await clock.advance(1.0)
    lines = scrape()
    assert f"workqueue_work_duration_seconds_count{{{lbl}}} 2.0" in lines
    assert f"workqueue_work_duration_seconds_sum{{{lbl}}} 8.0" in lines
    assert f"workqueue_queue_duration_seconds_sum{{{lbl}}} 9.0" in lines
    assert f"workqueue_depth{{{lbl}}} 0.0" in lines
    assert f"workqueue_unfinished_work_seconds{{{lbl}}} 1.0" in lines
    queue.add_after("c", 5)
    queue.add_rate_limited("d")
    queue.add_after("e", 0)  # AddAfter with no delay: a retry and an add
    lines = scrape()
    assert f"workqueue_retries_total{{{lbl}}} 3.0" in lines
    assert f"workqueue_adds_total{{{lbl}}} 4.0" in lines
    queue.shutdown()


def test_buckets_are_prometheus_exponential_buckets() -> None:
    # prometheus.ExponentialBuckets(10e-9, 10, 12)
    assert len(EXPONENTIAL_BUCKETS) == 12
    assert EXPONENTIAL_BUCKETS[0] == 1e-8
    assert EXPONENTIAL_BUCKETS[-1] == pytest.approx(1000.0)


async def test_webhook_series_by_path_and_code() -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="{}")

    async def bad(request: web.Request) -> web.Response:
        raise web.HTTPBadRequest(text="not an AdmissionReview")

    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("bug")

    app = web.Application(middlewares=[instrumented(("/crtest-mutate", "/crtest-validate"))])
    app.router.add_post("/crtest-mutate", ok)
    app.router.add_post("/crtest-validate", bad)
    app.router.add_post("/crtest-broken", broken)
    app.router.add_get("/crtest-healthz", ok)
    before = scrape()
    assert 'controller_runtime_webhook_requests_total{code="200",webhook="/crtest-validate"} 0.0' in before
    assert 'controller_runtime_webhook_requests_total{code="500",webhook="/crtest-validate"} 0.0' in before
    async with TestClient(TestServer(app)) as client:
        for _ in range(2):
            assert (await client.post("/crtest-mutate", data=b"{}")).status == 200
        assert (await client.post("/crtest-validate", data=b"{}")).status == 400
        assert (await client.get("/crtest-healthz")).status == 200
    lines = scrape()
    for expected in (
        'controller_runtime_webhook_requests_total{code="200",webhook="/crtest-mutate"} 2.0',
        'controller_runtime_webhook_requests_total{code="400",webhook="/crtest-validate"} 1.0',
        'controller_runtime_webhook_requests_total{code="200",webhook="/crtest-validate"} 0.0',
        'controller_runtime_webhook_latency_seconds_count{webhook="/crtest-mutate"} 2.0',
        'controller_runtime_webhook_latency_seconds_bucket{le="1000.0",webhook="/crtest-mutate"} 2.0',
        'controller_runtime_webhook_requests_in_flight{webhook="/crtest-mutate"} 0.0',
    ):
        assert expected in lines
    assert not any("crtest-healthz" in line or "crtest-broken" in line for line in lines)


async def test_webhook_request_failing_counts_500() -> None:
    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("bug")

    app = web.Application(middlewares=[instrumented(("/crtest-fail",))])
    app.router.add_post("/crtest-fail", broken)
    async with TestClient(TestServer(app)) as client:
        assert (await client.post("/crtest-fail", data=b"{}")).status == 500
    assert 'controller_runtime_webhook_requests_total{code="500",webhook="/crtest-fail"} 1.0' in scrape()


@pytest.mark.parametrize(
    ("kind", "group", "name"),
    [
        ("PyTorchJob", "kubeflow.org", "pytorchjob-controller"),
        ("TFJob", "kubeflow.org", "tfjob-controller"),
        ("MPIJob", "kubeflow.org", "mpijob-controller"),
        ("XGBoostJob", "kubeflow.org", "xgboostjob-controller"),
        ("PaddleJob", "kubeflow.org", "paddlejob-controller"),
        ("JAXJob", "kubeflow.org", "jaxjob-controller"),
        ("TrainJob", "trainer.kubeflow.org", "trainjob_controller"),
        ("PyTorchJob", "training.kubedl.io", "PytorchController"),
        ("TFJob", "training.kubedl.io", "TensorFlowController"),
        ("XGBoostJob", "training.kubedl.io", "XGBoostController"),
        ("PyTorchJob", "kubetrain.io", "kubetrain-pytorchjob-controller"),
    ],
)
def test_controller_names_are_the_replaced_operators(kind: str, group: str, name: str) -> None:
    assert job_controller(kind, group) == name


def test_controller_of_a_key_prefix() -> None:
    assert job_resource_controller("TFJob") == "kubetrain-tfjob-controller"
    assert job_resource_controller("TFJob.kubeflow.org") == "tfjob-controller"
    assert job_resource_controller("TrainJob.trainer.kubeflow.org") == "trainjob_controller"
    assert cron_controller("apps.kubedl.io", "Cron") == "CronController"
    assert cron_controller("kubetrain.io", "TrainingCron") == "kubetrain-trainingcron-controller"
