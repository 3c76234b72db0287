"""`--webhook-workers N`: the extra processes' command line, and their start and stop."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from kubetrain.cli import build_parser
from kubetrain.commands.webhook import WebhookRuntime
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
