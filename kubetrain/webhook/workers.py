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
Namespace watches, and serves its /healthz and /readyz on a loopback port of its own. Only the
parent's /metrics is scraped: the children's review latencies are not in it (docs/operations.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys

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

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._processes.values() if p.returncode is None]

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for i in range(self.count):
            self._tasks.append(loop.create_task(self._keep(i), name=f"webhook worker {i + 1}"))

    async def _keep(self, index: int) -> None:
        while not self._stopping:
            process = await asyncio.create_subprocess_exec(*self.argv)
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
