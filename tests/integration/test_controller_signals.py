"""docs/behaviour.md §10 "graceful stop on SIGTERM": `kubetrain controller` and `kubetrain run` as real
processes against devcluster. Holding the leader Lease, SIGTERM makes the process exit 0
promptly and release the Lease (holderIdentity emptied) so a standby takes over at once."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import LEASES

from .controller_support import Harness, eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Upper bounds only, generous for a 2-core machine at load 16: a start normally takes a few
# seconds and a stop well under one. The test waits on the Lease and on the exit, not on time.
START_WITHIN = 180.0
STOP_WITHIN = 60.0


STACK_OPTIONS = {"controller": False, "webhook": False, "simulator": False, "training_policies": False}


@pytest.mark.parametrize("command", ["controller", "run"])
async def test_sigterm_stops_promptly_and_releases_the_lease(
    env: tuple[DevStack, Harness], command: str, tmp_path: Path
) -> None:
    stack, h = env
    ns = await h.namespace(f"sig-{command}")
    lease = f"kubetrain-{command}"
    argv = [
        sys.executable,
        "-m",
        "kubetrain.cli",
        command,
        "--kubeconfig",
        stack.cluster.kubeconfig_path,
        "--leader-elect",
        "--leader-election-namespace",
        ns,
        "--leader-election-id",
        lease,
        "--metrics-port",
        "0",
    ]
    if command == "run":
        argv += ["--cert-dir", str(tmp_path), "--webhook-port", "0", "--webhook-host", "127.0.0.1"]
        argv += ["--no-training-policies"]
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    # Read stderr from the start: a pipe left unread fills up and blocks the process's logging.
    assert proc.stderr is not None
    stderr = asyncio.create_task(proc.stderr.read())
    try:

        async def holder() -> str:
            try:
                obj = await h.kube.get(LEASES, ns, lease)
            except ApiError as err:
                if err.is_not_found:
                    return ""
                raise
            return str((obj.get("spec") or {}).get("holderIdentity") or "")

        async def leading() -> str:
            if proc.returncode is not None:  # not an AssertionError: eventually() would retry it
                pytest.fail(f"the process exited ({proc.returncode}) before taking the Lease")
            return await holder()

        identity = await eventually(
            leading, within=START_WITHIN, interval=0.2, what=f"kubetrain {command} to take Lease {lease}"
        )
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), STOP_WITHIN)
        except TimeoutError:
            pytest.fail(f"kubetrain {command} still running {STOP_WITHIN:g}s after SIGTERM")
        output = (await stderr).decode(errors="replace")
        assert proc.returncode == 0, output[-2000:]
        assert await holder() == "", f"Lease still held by {identity} after SIGTERM"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await stderr
