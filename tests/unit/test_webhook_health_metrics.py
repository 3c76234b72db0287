"""HealthServer: /metrics exposition, /healthz, /readyz with named readiness checks."""

from __future__ import annotations

import aiohttp
import pytest

from kubetrain.serving.health import HealthServer
from kubetrain.serving.metrics import JOBS_CREATED, REGISTRY, WEBHOOK_REQUEST_DURATION


@pytest.fixture
async def health() -> HealthServer:
    server = HealthServer(host="127.0.0.1", port=0)
    await server.start()
    yield server  # type: ignore[misc]
    await server.stop()


async def get(server: HealthServer, path: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{server.port}{path}") as r:
        return r.status, await r.text(), r.headers.get("Content-Type", "")


async def test_metrics_exposes_kubetrain_metrics(health: HealthServer) -> None:
    JOBS_CREATED.labels(kind="TFJob", namespace="team-a").inc()
    WEBHOOK_REQUEST_DURATION.labels(
        webhook="validate", operation="CREATE", kind="TFJob", result="allowed"
    ).observe(0.002)
    status, body, ctype = await get(health, "/metrics")
    assert status == 200
    assert ctype.startswith("text/plain")
    assert 'kubetrain_jobs_created_total{kind="TFJob",namespace="team-a"}' in body
    assert "kubetrain_webhook_request_duration_seconds_bucket" in body
    assert "kubetrain_api_requests_total" in body  # declared even before the first sample
    assert "kubetrain_workqueue_depth" in body
    assert "kubetrain_reconcile_duration_seconds" in body


async def test_readyz_reflects_named_checks(health: HealthServer) -> None:
    state = {"synced": False}
    health.add_readiness_check("informers-synced", lambda: state["synced"])

    async def certs() -> bool:
        return True

    health.add_readiness_check("certs", certs)
    status, body, _ = await get(health, "/readyz")
    assert status == 503
    assert "[-]informers-synced failed" in body
    assert "[+]certs ok" in body

    state["synced"] = True
    status, body, _ = await get(health, "/readyz")
    assert (status, body) == (200, "ok")
    status, body, _ = await get(health, "/readyz?verbose")
    assert status == 200 and "[+]informers-synced ok" in body


async def test_failing_check_reports_reason_not_traceback(health: HealthServer) -> None:
    def broken() -> bool:
        raise RuntimeError("cache not started")

    health.add_readiness_check("cache", broken)
    status, body, _ = await get(health, "/readyz")
    assert status == 503
    assert "RuntimeError: cache not started" in body
    assert "Traceback" not in body
    status, body, _ = await get(health, "/healthz")
    assert (status, body) == (200, "ok")


def test_metrics_registry_is_private() -> None:
    from prometheus_client import REGISTRY as GLOBAL

    assert REGISTRY is not GLOBAL
    assert REGISTRY.get_sample_value("kubetrain_jobs_failed_total", {"kind": "X", "namespace": "y"}) is None
