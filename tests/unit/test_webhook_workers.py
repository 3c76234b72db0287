"""`--webhook-workers N`: the extra processes' command line, and their start and stop."""

from __future__ import annotations

import asyncio
import inspect
import os
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import jobs
from prometheus_client.parser import text_string_to_metric_families
from serving import free_port

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.cli import build_parser
from kubetrain.commands.webhook import WebhookRuntime
from kubetrain.serving.health import HealthServer
from kubetrain.serving.metrics import REGISTRY
from kubetrain.webhook.review import request_review
from kubetrain.webhook.workers import WebhookWorkers, child_argv

# Only an upper bound, for a 2-core machine at load 16: starting a worker normally takes a second.
WITHIN = 180.0


async def until(check: Callable[[], Any], what: str, last: Callable[[], object] | None = None) -> None:
    """Poll `check` (sync or async) until it is truthy; fail after WITHIN seconds."""
    deadline = time.monotonic() + WITHIN
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            detail = f" (last: {last()!r})" if last else ""
            raise AssertionError(f"timed out after {WITHIN:.0f}s waiting for {what}{detail}")
        await asyncio.sleep(0.1)


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
        "--cluster-domain=corp.example",
    )
    child = build_parser().parse_args(child_argv(args))  # type: ignore[arg-type]
    assert child.cluster_domain == args.cluster_domain and child.cluster_domain.configured == "corp.example"
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
    try:
        await until(lambda: workers.pids, "the worker process to start")
        [pid] = workers.pids
        os.kill(pid, 0)  # running
    finally:
        await workers.stop()
    assert workers.pids == []


async def test_parent_metrics_add_the_childrens_reviews(tmp_path: Path) -> None:
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    write_cert_dir(tmp_path, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    port = free_port()
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
        job = jobs.job(
            "TFJob", "mnist", {"Worker": 1}, namespace="team-a", image="tf:2.15", restart_policy="Never"
        )
        async with aiohttp.ClientSession() as session:

            async def validate() -> int:
                async with session.post(
                    f"https://127.0.0.1:{port}/validate", json=request_review(job), ssl=ctx
                ) as resp:
                    return resp.status

            async def answered() -> bool:  # the child is up once it answers
                try:
                    return await validate() == 200
                except aiohttp.ClientError:
                    return False

            await until(answered, "the worker to answer on the webhook port")
            for _ in range(2):
                assert await validate() == 200

            async def merged() -> list[float]:
                async with session.get(f"http://127.0.0.1:{parent.port}/metrics") as resp:
                    text = await resp.text()
                return [
                    s.value
                    for f in text_string_to_metric_families(text)
                    for s in f.samples
                    if s.name == "kubetrain_webhook_request_duration_seconds_count" and s.labels == labels
                ]

            # Every review was answered by the child (the only process on the port): 3 of them.
            # A scrape may miss a child that is slow to answer it (it is then left out), so the
            # parent is scraped until the child's count is in; a merge that drops it never is.
            counts: list[float] = []

            async def has_childs_count() -> bool:
                nonlocal counts
                counts = await merged()
                return counts == [own + 3]

            await until(
                has_childs_count, "the parent's /metrics to add the child's 3 reviews", lambda: counts
            )
        assert counts == [own + 3]
        assert REGISTRY.get_sample_value("kubetrain_webhook_request_duration_seconds_count", labels) in (
            None,
            own,
        )
    finally:
        await parent.stop()
        await workers.stop()
