"""`kubetrain controller`: the job controller alone (docs/behaviour.md §4-§8, §10)."""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

from kubetrain.commands._flags import add_common_flags, add_controller_flags
from kubetrain.commands._metrics import metrics_server
from kubetrain.commands._process import run_service, stop_on_signals
from kubetrain.commands._progress import ProgressRuntime, add_progress_flags
from kubetrain.frameworks.checks import listing
from kubetrain.frameworks.registry import known_kinds
from kubetrain.operator.runtime import ControllerRuntime

log = logging.getLogger(__name__)


async def wait_for_stop(stop: asyncio.Event, runtime: ControllerRuntime) -> None:
    """Return when asked to stop (signal) or when this replica lost the leader Lease."""
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(runtime.lost_leadership.wait())]
    _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    if runtime.lost_leadership.is_set() and not stop.is_set():
        log.warning("lost the leader Lease: stopping so that a fresh process can stand by for it")


async def serve(args: argparse.Namespace, stop: asyncio.Event | None = None) -> None:
    stop = stop or asyncio.Event()
    health = await metrics_server(args)
    runtime = ControllerRuntime(args)
    progress = ProgressRuntime(args)
    runtime.progress = progress.injection()
    # The controller registers its readiness check only once it has checked the API groups:
    # not ready before that (no check registered would answer 200).
    started = health.hold_until_started()
    with stop_on_signals(stop):
        await health.start()
        try:
            await runtime.start(health)
            await progress.start(health, runtime)
            started()
            await wait_for_stop(stop, runtime)
        finally:
            await progress.stop()
            await runtime.stop()
            await health.stop()


def run(args: argparse.Namespace) -> int:
    return run_service(args, serve, log, "the controller")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "controller",
        help=f"run the job controller (reconciles {listing(known_kinds())})",
        description="Run the kubetrain controller: watches jobs and their pods, creates pods, the "
        "headless Service and PodGroups, applies restart and run policies and writes job status.",
    )
    add_common_flags(parser)
    add_controller_flags(parser)
    add_progress_flags(parser)
    parser.set_defaults(func=run)
