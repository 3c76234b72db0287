"""The health/metrics port under idle connections; metric series and buckets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from serving import assert_handshakes_bounded, closed_within

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import ReloadingTLS, write_cert_dir
from kubetrain.serving.guard import ConnectionLimits
from kubetrain.serving.health import HealthServer
from kubetrain.serving.metrics import (
    JOBS_CREATED,
    JOBS_FAILED,
    REGISTRY,
    WEBHOOK_REQUEST_DURATION,
    forget_namespace,
)


@pytest.fixture
async def health() -> AsyncIterator[HealthServer]:
    server = HealthServer(
        host="127.0.0.1",
        port=0,
        limits=ConnectionLimits(header_timeout=0.3, idle_timeout=0.3, max_connections=3),
    )
    await server.start()
    yield server
    await server.stop()


async def test_idle_partial_and_excess_connections_are_closed(health: HealthServer) -> None:
    idle_reader, idle = await asyncio.open_connection("127.0.0.1", health.port)
    partial_reader, partial = await asyncio.open_connection("127.0.0.1", health.port)
    partial.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    extra = [await asyncio.open_connection("127.0.0.1", health.port) for _ in range(2)]
    assert await closed_within(extra[-1][0], 1)  # the fourth connection: over max_connections
    assert await closed_within(idle_reader, 3)
    assert await closed_within(partial_reader, 3)
    # a connection that finished a request is closed after the idle timeout
    reader, writer = await asyncio.open_connection("127.0.0.1", health.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (await reader.readline()).startswith(b"HTTP/1.1 200")
    assert await closed_within(reader, 3)
    for w in (idle, partial, writer, *(w for _, w in extra)):
        w.close()


async def test_a_tls_handshake_never_finished_is_closed_after_the_header_timeout(tmp_path: Path) -> None:
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    write_cert_dir(tmp_path, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    server = HealthServer(
        host="127.0.0.1",
        port=0,
        tls=ReloadingTLS(tmp_path),
        limits=ConnectionLimits(header_timeout=0.3, idle_timeout=30, max_connections=3),
    )
    await server.start()
    try:
        await assert_handshakes_bounded(server.port, bundle.ca.cert_pem.decode(), "/healthz")
    finally:
        await server.stop()


def test_webhook_latency_buckets_reach_the_longest_webhook_timeout() -> None:
    WEBHOOK_REQUEST_DURATION.labels("validate", "CREATE", "TFJob", "allowed").observe(12.0)
    assert (
        REGISTRY.get_sample_value(
            "kubetrain_webhook_request_duration_seconds_bucket",
            {
                "webhook": "validate",
                "operation": "CREATE",
                "kind": "TFJob",
                "result": "allowed",
                "le": "30.0",
            },
        )
        is not None
    )
    bucket_10 = REGISTRY.get_sample_value(
        "kubetrain_webhook_request_duration_seconds_bucket",
        {"webhook": "validate", "operation": "CREATE", "kind": "TFJob", "result": "allowed", "le": "10.0"},
    )
    bucket_30 = REGISTRY.get_sample_value(
        "kubetrain_webhook_request_duration_seconds_bucket",
        {"webhook": "validate", "operation": "CREATE", "kind": "TFJob", "result": "allowed", "le": "30.0"},
    )
    assert bucket_10 is not None and bucket_30 is not None and bucket_30 > bucket_10


def test_series_of_a_deleted_namespace_are_removed() -> None:
    JOBS_CREATED.labels(kind="TFJob", namespace="gone-ns").inc()
    JOBS_FAILED.labels(kind="PyTorchJob", namespace="gone-ns").inc()
    JOBS_CREATED.labels(kind="TFJob", namespace="kept-ns").inc()
    assert forget_namespace("gone-ns") == 2
    assert (
        REGISTRY.get_sample_value("kubetrain_jobs_created_total", {"kind": "TFJob", "namespace": "gone-ns"})
        is None
    )
    assert (
        REGISTRY.get_sample_value("kubetrain_jobs_created_total", {"kind": "TFJob", "namespace": "kept-ns"})
        == 1
    )
    assert forget_namespace("gone-ns") == 0
