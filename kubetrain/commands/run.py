"""`kubetrain run`: controller and admission webhook in one process (what the Helm chart runs)."""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

from kubetrain.commands._flags import add_common_flags, add_controller_flags, add_webhook_flags
from kubetrain.commands._metrics import metrics_server
from kubetrain.commands._process import run_service, stop_on_signals
from kubetrain.commands._progress import ProgressRuntime, add_progress_flags
from kubetrain.commands.controller import wait_for_stop
from kubetrain.commands.webhook import WebhookRuntime
from kubetrain.operator.runtime import ControllerRuntime

log = logging.getLogger(__name__)


async def serve(args: argparse.Namespace, stop: asyncio.Event | None = None) -> None:
    stop = stop or asyncio.Event()
    health = await metrics_server(args)
    webhook = WebhookRuntime.from_args(args)
    controller = ControllerRuntime(args)
    # The training-progress endpoint shares the webhook's certificate (any --cert-mode).
    progress = ProgressRuntime(args, tls=None if args.status_server_cert_dir else webhook.server.tls)
    # Each part registers its readiness check as it starts: not ready until the last has.
    started = health.hold_until_started()
    with stop_on_signals(stop):
        await health.start()
        try:
            await webhook.start(health)
            controller.progress = progress.injection()  # after the webhook wrote its certificate
            await controller.start(health)
            await progress.start(health, controller)
            started()
            await wait_for_stop(stop, controller)
            log.info("stopping")
        finally:
            await progress.stop()
            await controller.stop()
            await webhook.stop()
            await health.stop()


def run(args: argparse.Namespace) -> int:
    return run_service(args, serve, log, "kubetrain")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the controller and the admission webhooks in one process",
        description="Run the kubetrain controller and its admission webhooks (/mutate, /validate) "
        "in one process, with /metrics, /healthz and /readyz on --metrics-port, and the "
        "training-progress endpoint (Kubeflow Trainer's status server) on --status-server-port.",
    )
    add_common_flags(parser)
    add_controller_flags(parser)
    add_webhook_flags(parser)
    add_progress_flags(parser)
    parser.set_defaults(func=run)
