"""WebhookServer over real TLS on loopback: answers, 400s, TLS versions, readiness, cert hot reload."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import jsonpatch
import pytest
from cryptography import x509
from jobs import job
from webhooks import client_context

from kubetrain.certs.generate import CertificateBundle, generate_bundle, generate_serving_cert
from kubetrain.certs.tls import write_cert_dir
from kubetrain.jobs.defaulting import default_job
from kubetrain.serving.metrics import REGISTRY
from kubetrain.webhook.review import request_review
from kubetrain.webhook.server import WebhookServer


def tfjob(name: str = "mnist") -> dict[str, Any]:
    return job("TFJob", name, {"Worker": 2}, namespace="team-a", image="tf:2.15")


@pytest.fixture
def webhook_options() -> dict[str, Any]:
    return {"max_body_bytes": 64 * 1024}


async def post(
    session: aiohttp.ClientSession,
    server: WebhookServer,
    path: str,
    body: Any,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with session.post(server.url + path, data=data, headers={"Content-Type": content_type}) as r:
        text = await r.text()
        return r.status, (json.loads(text) if r.content_type == "application/json" else text)


async def test_mutate_over_tls_returns_patch_to_defaults(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    job = tfjob()
    status, review = await post(session, server, "/mutate", request_review(job, uid="u-1"))
    assert status == 200
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    resp = review["response"]
    assert resp["uid"] == "u-1" and resp["allowed"] is True
    patched = jsonpatch.apply_patch(job, json.loads(base64.b64decode(resp["patch"])))
    assert patched == default_job(job).obj
    sample = REGISTRY.get_sample_value(
        "kubetrain_webhook_request_duration_seconds_count",
        {"webhook": "mutate", "operation": "CREATE", "kind": "TFJob", "result": "patched"},
    )
    assert sample is not None and sample >= 1


async def test_validate_over_tls_denies_with_paths(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    job = default_job(tfjob("Not_A_Label")).obj
    status, review = await post(session, server, "/validate", request_review(job, uid="u-2", dry_run=True))
    assert status == 200
    resp = review["response"]
    assert resp["allowed"] is False and resp["uid"] == "u-2"
    assert "metadata.name: Invalid" in resp["status"]["message"]


@pytest.mark.parametrize(
    ("body", "content_type", "fragment"),
    [
        (b"{}", "text/plain", "Content-Type must be application/json"),
        (b"{", "application/json", "not valid JSON"),
        (b"", "application/json", "empty"),
        (
            json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {"kind": {"kind": "TFJob"}, "operation": "CREATE", "object": {}},
                }
            ).encode(),
            "application/json",
            "request.uid is required",
        ),
        (
            json.dumps({"apiVersion": "v1", "kind": "AdmissionReview", "request": {}}).encode(),
            "application/json",
            "apiVersion must be",
        ),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "Status"}).encode(),
            "application/json",
            'kind must be "AdmissionReview"',
        ),
        (b'{"a": "' + b"x" * 70000 + b'"}', "application/json", "limit is 65536 bytes"),
    ],
)
async def test_bad_requests_get_400_with_message(
    server: WebhookServer, session: aiohttp.ClientSession, body: bytes, content_type: str, fragment: str
) -> None:
    for path in ("/mutate", "/validate"):
        status, text = await post(session, server, path, body, content_type)
        assert status == 400
        assert fragment in text
        assert "Traceback" not in text


async def test_oversized_chunked_body_gets_400(server: WebhookServer, session: aiohttp.ClientSession) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b" " * 8192

    async with session.post(
        server.url + "/validate", data=chunks(), headers={"Content-Type": "application/json"}
    ) as r:
        assert r.status == 400
        assert "exceeds the limit" in await r.text()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_tls_1_1_refused_and_1_2_accepted(server: WebhookServer, bundle: CertificateBundle) -> None:
    def ctx_for(version: ssl.TLSVersion) -> ssl.SSLContext:
        ctx = client_context(bundle)
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        ctx.minimum_version = ssl.TLSVersion.TLSv1
        ctx.maximum_version = version
        return ctx

    # the server answers a TLS 1.1 ClientHello with a protocol_version alert (or a reset)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        await asyncio.open_connection("127.0.0.1", server.port, ssl=ctx_for(ssl.TLSVersion.TLSv1_1))
    _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=ctx_for(ssl.TLSVersion.TLSv1_2))
    assert writer.get_extra_info("ssl_object").version() == "TLSv1.2"
    writer.close()
    await writer.wait_closed()


async def test_ready_only_once_certificates_are_loaded(tmp_path: Path, bundle: CertificateBundle) -> None:
    srv = WebhookServer(cert_dir=str(tmp_path / "certs"), host="127.0.0.1", port=0, cert_poll_interval=3600)
    await srv.start()
    try:
        assert srv.ready is False and srv.certificates_loaded() is False
        with pytest.raises((ssl.SSLError, ConnectionError)):
            await asyncio.open_connection("127.0.0.1", srv.port, ssl=client_context(bundle))
        write_cert_dir(tmp_path / "certs", bundle.serving.cert_pem, bundle.serving.key_pem)
        assert srv.tls.reload() is True
        assert srv.ready is True
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_context(bundle))) as s:
            async with s.get(srv.url + "/readyz") as r:
                assert (r.status, await r.text()) == (200, "ok")
            async with s.get(srv.url + "/healthz") as r:
                assert r.status == 200
    finally:
        await srv.stop()


# ---- hot reload --------------------------------------------------------------------------------------
def kubelet_write(cert_dir: Path, generation: int, cert: bytes, key: bytes) -> None:
    """Write files the way kubelet updates a mounted Secret: a new dir and an atomic ..data swap."""
    ts = cert_dir / f"..2024_01_01_00_00_{generation:02d}"
    ts.mkdir()
    (ts / "tls.crt").write_bytes(cert)
    (ts / "tls.key").write_bytes(key)
    tmp_link = cert_dir / "..data_tmp"
    os.symlink(ts.name, tmp_link)
    os.replace(tmp_link, cert_dir / "..data")
    for name in ("tls.crt", "tls.key"):
        if not (cert_dir / name).is_symlink():
            os.symlink(f"..data/{name}", cert_dir / name)


async def peer_serial(port: int, ctx: ssl.SSLContext, server_hostname: str | None = None) -> int:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname=server_hostname)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    return x509.load_der_x509_certificate(der).serial_number


async def test_certificate_rotation_without_failed_requests(
    tmp_path: Path, bundle: CertificateBundle
) -> None:
    cert_dir = tmp_path / "mounted-secret"
    cert_dir.mkdir()
    kubelet_write(cert_dir, 1, bundle.serving.cert_pem, bundle.serving.key_pem)
    srv = WebhookServer(cert_dir=str(cert_dir), host="127.0.0.1", port=0, cert_poll_interval=3600)
    await srv.start()
    ctx = client_context(bundle)
    old_serial = bundle.serving.cert.serial_number
    assert await peer_serial(srv.port, ctx) == old_serial
    results: list[int] = []
    errors: list[BaseException] = []
    stop = asyncio.Event()
    progress = asyncio.Event()

    async def wait_for_results(count: int) -> None:
        async def wait() -> None:
            while len(results) < count:
                await progress.wait()
                progress.clear()

        await asyncio.wait_for(wait(), 30)

    async def client(keepalive: bool) -> None:
        connector = aiohttp.TCPConnector(ssl=ctx, force_close=not keepalive)
        async with aiohttp.ClientSession(connector=connector) as s:
            while not stop.is_set():
                try:
                    async with s.post(
                        srv.url + "/validate", json=request_review(default_job(tfjob()).obj)
                    ) as r:
                        body = await r.json()
                        results.append(r.status)
                        progress.set()
                        assert body["response"]["allowed"] is True
                except Exception as exc:  # collected: the test asserts there are none
                    errors.append(exc)

    tasks = [asyncio.create_task(client(keepalive=i % 2 == 0)) for i in range(6)]
    try:
        await wait_for_results(30)
        new = generate_serving_cert(bundle.ca, ["localhost"], ["127.0.0.1"])
        kubelet_write(cert_dir, 2, new.cert_pem, new.key_pem)
        assert srv.tls.reload() is True
        seen = len(results)
        await wait_for_results(seen + 30)
        assert await peer_serial(srv.port, ctx) == new.cert.serial_number
        assert await peer_serial(srv.port, ctx, server_hostname="localhost") == new.cert.serial_number
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        await srv.stop()
    assert errors == []
    assert set(results) == {200}


async def test_half_written_rotation_keeps_serving_the_old_certificate(
    server: WebhookServer, bundle: CertificateBundle
) -> None:
    other = generate_bundle(["localhost"], ["127.0.0.1"])
    # a new certificate with the old key: unusable, so the old pair stays in service
    (server.tls.cert_dir / "tls.crt").write_bytes(other.serving.cert_pem)
    assert server.tls.reload() is False
    assert await peer_serial(server.port, client_context(bundle)) == bundle.serving.cert.serial_number
    (server.tls.cert_dir / "tls.key").write_bytes(other.serving.key_pem)
    assert server.tls.reload() is True
    assert await peer_serial(server.port, client_context(other)) == other.serving.cert.serial_number


async def test_unchanged_files_are_not_reloaded(server: WebhookServer) -> None:
    loads = server.tls.reloads
    assert server.tls.reload() is False
    os.utime(server.tls.cert_path)  # touched, same content
    assert server.tls.reload() is False
    assert server.tls.reloads == loads


async def test_convert_over_tls_answers_conversion_reviews(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    v1 = {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "pi"}, "spec": {}}
    request = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "c-1", "desiredAPIVersion": "kubeflow.org/v2beta1", "objects": [v1]},
    }
    status, review = await post(session, server, "/convert", request)
    assert status == 200 and review["kind"] == "ConversionReview"
    response = review["response"]
    assert response["uid"] == "c-1" and response["result"] == {"status": "Success"}
    assert response["convertedObjects"][0]["apiVersion"] == "kubeflow.org/v2beta1"
    # An unknown version: a failed review (200), not a server error.
    request["request"]["desiredAPIVersion"] = "kubeflow.org/v9"
    status, review = await post(session, server, "/convert", request)
    assert status == 200 and review["response"]["result"]["status"] == "Failure"
    # Not a ConversionReview at all: 400 with the reason.
    for body, content_type, fragment in [
        (b"{", "application/json", "not JSON"),
        (b"{}", "text/plain", "Content-Type must be application/json"),
        (
            json.dumps({"kind": "AdmissionReview"}).encode(),
            "application/json",
            "expected kind ConversionReview",
        ),
    ]:
        status, text = await post(session, server, "/convert", body, content_type)
        assert status == 400 and fragment in text and "Traceback" not in text
