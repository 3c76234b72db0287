"""Extra webhook processes sharing the webhook port (`--webhook-workers N`).

Python runs one review at a time per process (the GIL), so one process uses one CPU however
many threads it has. With `--webhook-workers N` the process that owns the webhook (`kubetrain run`
or `kubetrain webhook`) binds its port with SO_REUSEPORT and starts N-1 children running
`kubetrain webhook` on the same address and port; the kernel spreads new connections across the
N listening sockets.

```python
workers = WebhookWorkers(args, count=2)   # args: the parent's parsed flags
await workers.start()                     # the children; restarted if one exits
...
await workers.stop()                      # SIGTERM, then SIGKILL after `grace` seconds
```

A child reads the serving certificate from the same `--cert-dir` (in self-managed mode the
parent writes it there; every process polls the directory), keeps its own TrainingPolicy and
Namespace watches, and serves its /healthz, /readyz and /metrics on a loopback port of its own
and on a Unix socket in a private directory of the parent (`metrics_sockets`): the parent's
/metrics adds the children's counters and histograms to its own (kubetrain.serving.merge), so one
scrape sees every process's reviews.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import sys
import tempfile

log = logging.getLogger(__name__)

RESTART_DELAY = 1.0


def child_argv(args: argparse.Namespace) -> list[str]:
    """The `kubetrain webhook` command line of one child process, from the parent's flags."""
    argv = [
        "webhook",
        "--webhook-reuse-port",
        "--webhook-workers=1",
        f"--webhook-host={args.webhook_host}",
        f"--webhook-port={args.webhook_port}",
        f"--webhook-max-request-bytes={args.webhook_max_request_bytes}",
        f"--webhook-review-processes={args.webhook_review_processes}",
        f"--webhook-review-time-limit={args.webhook_review_time_limit}",
        "--cert-mode=directory",
        f"--cert-dir={args.cert_dir}",
        f"--gang-scheduler={args.gang_scheduler}",
        f"--max-replicas-per-job={args.max_replicas_per_job}",
        "--metrics-bind-address=127.0.0.1",
        "--metrics-port=0",
        f"--log-level={args.log_level}",
        "--training-policies" if args.training_policies else "--no-training-policies",
    ]
    if args.kubeconfig:
        argv.append(f"--kubeconfig={args.kubeconfig}")
    return argv


class WebhookWorkers:
    def __init__(self, args: argparse.Namespace, count: int, *, grace: float = 10.0) -> None:
        self.argv = [sys.executable, "-m", "kubetrain.cli", *child_argv(args)]
        self.count = count
        self.grace = grace
        self._tasks: list[asyncio.Task[None]] = []
        self._processes: dict[int, asyncio.subprocess.Process] = {}
        self._stopping = False
        self._socket_dir: str | None = None

    def metrics_socket(self, index: int) -> str:
        if self._socket_dir is None:
            self._socket_dir = tempfile.mkdtemp(prefix="kubetrain-workers-")
        return os.path.join(self._socket_dir, f"worker-{index + 1}.sock")

    def metrics_sockets(self) -> list[str]:
        """The Unix sockets the running children serve /metrics on."""
        return [self.metrics_socket(i) for i, p in self._processes.items() if p.returncode is None]

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._processes.values() if p.returncode is None]

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for i in range(self.count):
            self._tasks.append(loop.create_task(self._keep(i), name=f"webhook worker {i + 1}"))

    async def _keep(self, index: int) -> None:
        while not self._stopping:
            socket_path = self.metrics_socket(index)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(socket_path)  # left by a child that did not stop cleanly
            process = await asyncio.create_subprocess_exec(*self.argv, f"--metrics-unix-socket={socket_path}")
            self._processes[index] = process
            code = await process.wait()
            if self._stopping:
                return
            log.error(
                "webhook worker %d (pid %d) exited with %d; restarting it", index + 1, process.pid, code
            )
            await asyncio.sleep(RESTART_DELAY)

    async def stop(self) -> None:
        self._stopping = True
        for process in self._processes.values():
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
        for process in self._processes.values():
            try:
                await asyncio.wait_for(process.wait(), self.grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
