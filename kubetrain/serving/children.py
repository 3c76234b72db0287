"""Child processes a server keeps running beside itself: started, restarted when one exits,
stopped with SIGTERM then SIGKILL, each serving its /metrics on a Unix socket in a private
directory so the parent's /metrics can add them (kubetrain.serving.merge).

```python
argv = [sys.executable, "-m", "kubetrain.cli", "webhook", ...]
children = ChildProcesses(argv, count=2, name="webhook worker")
await children.start()                  # each child gets --metrics-unix-socket=<its socket>
health.add_metrics_peers(children.metrics_sockets)
...
await children.stop()                   # SIGTERM, then SIGKILL after `grace` seconds
```

Used by `--webhook-workers` (kubetrain.webhook.workers) and `--status-server-process`
(kubetrain.commands._progress).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile

log = logging.getLogger(__name__)

RESTART_DELAY = 1.0


class ChildProcesses:
    def __init__(self, argv: list[str], count: int, *, name: str, grace: float = 10.0) -> None:
        self.argv = argv
        self.count = count
        self.name = name
        self.grace = grace
        self._tasks: list[asyncio.Task[None]] = []
        self._processes: dict[int, asyncio.subprocess.Process] = {}
        self._stopping = False
        self._socket_dir: str | None = None

    def metrics_socket(self, index: int) -> str:
        if self._socket_dir is None:
            self._socket_dir = tempfile.mkdtemp(prefix="kubetrain-children-")
        return os.path.join(self._socket_dir, f"child-{index + 1}.sock")

    def metrics_sockets(self) -> list[str]:
        """The Unix sockets the running children serve /metrics on."""
        return [self.metrics_socket(i) for i, p in self._processes.items() if p.returncode is None]

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._processes.values() if p.returncode is None]

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for i in range(self.count):
            self._tasks.append(loop.create_task(self._keep(i), name=f"{self.name} {i + 1}"))

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
            log.error("%s %d (pid %d) exited with %d; restarting it", self.name, index + 1, process.pid, code)
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
