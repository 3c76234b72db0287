"""`--webhook-workers N`: the extra processes' command line, and their start and stop."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.cli import build_parser
from kubetrain.commands.webhook import WebhookRuntime
from kubetrain.serving.health import HealthServer
from kubetrain.serving.metrics import REGISTRY
from kubetrain.webhook.review import request_review
from kubetrain.webhook.workers import WebhookWorkers, child_argv


def parse(*argv: str) -> object:
    return build_parser().parse_args(["run", *argv])


def test_child_command_line_keeps_the_webhook_settings() -> None:
    args = parse(
        "--webhook-workers=3",
        "--webhook-port=9555",
        "--cert-dir=/certs",
        "--cert-mode=self-managed",
        "--webhook-namespace=ops",
        "--max-replicas-per-job=77",
        "--gang-scheduler=volcano",
        "--no-training-policies",
    )
    child = build_parser().parse_args(child_argv(args))  # type: ignore[arg-type]
    assert child.webhook_reuse_port and child.webhook_workers == 1
    assert (child.webhook_port, child.cert_dir, child.cert_mode) == (9555, "/certs", "directory")
    assert (child.max_replicas_per_job, child.gang_scheduler) == (77, "volcano")
    assert child.training_policies is False
    assert (child.metrics_bind_address, child.metrics_port) == ("127.0.0.1", 0)


def test_runtime_with_workers_binds_with_reuse_port() -> None:
    runtime = WebhookRuntime.from_args(parse("--webhook-workers=2", "--no-training-policies"))  # type: ignore[arg-type]
    assert runtime.server.reuse_port is True
    assert runtime.workers is not None and runtime.workers.count == 1
    assert WebhookRuntime.from_args(parse("--no-training-policies")).workers is None  # type: ignore[arg-type]


async def test_workers_start_and_stop(tmp_path: Path) -> None:
    args = parse(f"--cert-dir={tmp_path}", "--webhook-port=0", "--no-training-policies")
    workers = WebhookWorkers(args, 1, grace=5)  # type: ignore[arg-type]
    await workers.start()
    for _ in range(100):
        if workers.pids:
            break
        await asyncio.sleep(0.05)
    [pid] = workers.pids
    os.kill(pid, 0)  # running
    await workers.stop()
    assert workers.pids == []


async def test_parent_metrics_add_the_childrens_reviews(tmp_path: Path) -> None:
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    write_cert_dir(tmp_path, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = parse(f"--cert-dir={tmp_path}", f"--webhook-port={port}", "--no-training-policies")
    workers = WebhookWorkers(args, 1, grace=5)  # type: ignore[arg-type]
    parent = HealthServer(host="127.0.0.1", port=0)
    parent.add_metrics_peers(workers.metrics_sockets)
    labels = {"webhook": "validate", "operation": "CREATE", "kind": "TFJob", "result": "allowed"}
    own = REGISTRY.get_sample_value("kubetrain_webhook_request_duration_seconds_count", labels) or 0.0
    await workers.start()
    await parent.start()
    try:
        ctx = ssl.create_default_context(cadata=bundle.ca.cert_pem.decode())
        job = {
            "apiVersion": "kubetrain.io/v1",
            "kind": "TFJob",
            "metadata": {"name": "mnist", "namespace": "team-a"},
            "spec": {
                "tfReplicaSpecs": {
                    "Worker": {
                        "replicas": 1,
                        "restartPolicy": "Never",
                        "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2.15"}]}},
                    }
                }
            },
        }
        async with aiohttp.ClientSession() as session:
            for _ in range(200):  # the child is up once it answers
                try:
                    async with session.post(
                        f"https://127.0.0.1:{port}/validate", json=request_review(job), ssl=ctx
                    ) as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
            for _ in range(2):
                async with session.post(
                    f"https://127.0.0.1:{port}/validate", json=request_review(job), ssl=ctx
                ) as resp:
                    assert resp.status == 200
            async with session.get(f"http://127.0.0.1:{parent.port}/metrics") as resp:
                text = await resp.text()
        counts = [
            s.value
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if s.name == "kubetrain_webhook_request_duration_seconds_count" and s.labels == labels
        ]
        # Every review was answered by the child (the only process on the port): 3 of them.
        assert counts == [own + 3]
        assert REGISTRY.get_sample_value("kubetrain_webhook_request_duration_seconds_count", labels) in (
            None,
            own,
        )
    finally:
        await parent.stop()
        await workers.stop()
