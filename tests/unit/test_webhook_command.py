"""`kubetrain webhook`: flags, the runtime with a HealthServer, graceful stop."""

from __future__ import annotations

import argparse
import asyncio
import ssl
from pathlib import Path

import aiohttp
import pytest

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.cli import build_parser
from kubetrain.commands.webhook import ConfigError, WebhookRuntime, serve
from kubetrain.serving.health import HealthServer


def parse(*argv: str) -> object:
    return build_parser().parse_args(["webhook", *argv])


def test_shared_flag_defaults() -> None:
    args = parse()
    assert args.webhook_port == 9443 and args.metrics_port == 8080  # type: ignore[attr-defined]
    assert args.cert_mode == "directory" and args.cert_dir == "/tmp/kubetrain/certs"  # type: ignore[attr-defined]
    assert args.gang_scheduler == "none" and args.log_level == "info"  # type: ignore[attr-defined]


def test_bad_flag_values_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--webhook-port", "70000")
    assert "not a port number" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse("--cert-mode", "magic")


def test_self_managed_needs_a_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    args = build_parser().parse_args(["webhook", "--cert-mode", "self-managed", "--no-training-policies"])
    args.webhook_namespace = None
    with pytest.raises(ConfigError, match="--webhook-namespace"):
        WebhookRuntime.from_args(args)


def local_webhook(cert_dir: Path, *flags: str) -> argparse.Namespace:
    """`kubetrain webhook` on 127.0.0.1, free ports, certificates in `cert_dir`, no policies."""
    return build_parser().parse_args(
        [
            "webhook",
            "--cert-dir",
            str(cert_dir),
            "--webhook-port",
            "0",
            "--webhook-host",
            "127.0.0.1",
            "--metrics-port",
            "0",
            "--no-training-policies",
            *flags,
        ]
    )


async def test_runtime_ready_once_certs_are_there_and_stops_cleanly(tmp_path: Path) -> None:
    cert_dir = tmp_path / "certs"
    args = local_webhook(cert_dir, "--gang-scheduler", "volcano")
    health = HealthServer(host="127.0.0.1", port=0)
    await health.start()
    runtime = WebhookRuntime.from_args(args)
    await runtime.start(health)
    try:
        assert runtime.server.gang_scheduling is True
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{health.port}/readyz") as r:
                assert r.status == 503 and "[-]webhook-certs" in await r.text()
            bundle = generate_bundle(["localhost"], ["127.0.0.1"])
            write_cert_dir(cert_dir, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
            runtime.server.tls.reload()
            async with s.get(f"http://127.0.0.1:{health.port}/readyz") as r:
                assert r.status == 200
            ctx = ssl.create_default_context(cadata=bundle.ca.cert_pem.decode())
            async with s.get(runtime.server.url + "/healthz", ssl=ctx) as r:
                assert r.status == 200
    finally:
        await runtime.stop()
        await health.stop()
    assert not runtime.server.ready


async def test_serve_returns_when_asked_to_stop(tmp_path: Path) -> None:
    args = local_webhook(tmp_path)
    stop = asyncio.Event()
    task = asyncio.create_task(serve(args, stop))
    await asyncio.sleep(0.1)  # let it bind; nothing time-dependent is asserted
    assert not task.done()
    stop.set()  # what the SIGTERM handler does
    await asyncio.wait_for(task, 10)
