"""`kubetrain run` is not ready (/readyz) until every part it runs has started. Each part
registers its readiness check as it starts; a probe between two starts saw only the checks
registered so far, all passing, and a pod could be routed to (or a test could report to) a
training-progress endpoint that was not listening yet."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from serving import free_port

from kubetrain.cli import build_parser
from kubetrain.commands import controller as controller_command
from kubetrain.commands import run as run_command
from kubetrain.commands._progress import ProgressRuntime
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.operator.runtime import ControllerRuntime

from .controller_support import eventually
from .test_status_server_process import WITHIN, Operator

pytestmark = pytest.mark.asyncio


async def readyz(port: int) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/readyz?verbose") as resp,
    ):
        return resp.status, await resp.text()


async def test_not_ready_until_the_progress_endpoint_has_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = DevStack(DevStackOptions(webhook=False, controller=False, simulated_nodes=1))
    await stack.start()
    operator = Operator(stack, tmp_path)
    operator.args.status_server_process = False  # in process: no child to wait for
    held = asyncio.Event()
    start = ProgressRuntime.start

    async def held_start(self: ProgressRuntime, health: Any, controller: Any) -> None:
        await held.wait()
        await start(self, health, controller)

    monkeypatch.setattr(ProgressRuntime, "start", held_start)
    task = asyncio.create_task(run_command.serve(operator.args, operator.stop))
    try:

        async def controller_ready() -> str | None:
            try:
                _, text = await readyz(operator.metrics_port)
            except aiohttp.ClientError:
                return None
            return text if "[+]controller ok" in text else None

        text = await eventually(
            controller_ready, within=WITHIN, what="the controller's readiness check passing"
        )
        assert "progress-endpoint" not in text  # its part has not started yet
        status, text = await readyz(operator.metrics_port)
        assert status == 503 and "[-]started" in text

        held.set()

        async def ready() -> bool:
            status, text = await readyz(operator.metrics_port)
            return status == 200 and "[+]progress-endpoint ok" in text

        await eventually(ready, within=WITHIN, what="/readyz 200 once every part started")
    finally:
        held.set()
        operator.stop.set()
        await asyncio.wait_for(task, 60)
        await stack.stop()


async def test_the_controller_alone_is_not_ready_before_its_controller_has_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kubetrain controller` serves /readyz before its controller has checked the API groups
    and registered its check: no check registered must not read as ready."""
    stack = DevStack(DevStackOptions(webhook=False, controller=False, simulated_nodes=1))
    await stack.start()
    metrics_port = free_port()
    args = build_parser().parse_args(
        [
            "controller",
            f"--kubeconfig={stack.cluster.kubeconfig_path}",
            "--no-leader-elect",
            "--metrics-bind-address=127.0.0.1",
            f"--metrics-port={metrics_port}",
        ]
    )
    stop = asyncio.Event()
    held, holding = asyncio.Event(), asyncio.Event()
    start = ControllerRuntime.start

    async def held_start(self: ControllerRuntime, health: Any = None) -> None:
        holding.set()
        await held.wait()
        await start(self, health)

    monkeypatch.setattr(ControllerRuntime, "start", held_start)
    task = asyncio.create_task(controller_command.serve(args, stop))
    try:
        await asyncio.wait_for(holding.wait(), WITHIN)

        async def answers() -> tuple[int, str] | None:
            try:
                return await readyz(metrics_port)
            except aiohttp.ClientError:
                return None

        status, text = await eventually(answers, within=WITHIN, what="/readyz answering")
        assert status == 503 and "[-]started" in text

        held.set()

        async def ready() -> bool:
            status, text = await readyz(metrics_port)
            return status == 200 and "[+]controller ok" in text

        await eventually(ready, within=WITHIN, what="/readyz 200 once the controller started")
    finally:
        held.set()
        stop.set()
        await asyncio.wait_for(task, 60)
        await stack.stop()
