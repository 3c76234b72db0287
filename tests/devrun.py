"""`kubetrain dev` run in the test's event loop, for the tests that open what it prints:
`async with dev_dashboard([...flags]) as (url, out, stop)` starts it, waits for the printed
dashboard URL and the first progress bar, and yields them with `stop()` (cancel, as Ctrl-C does;
returns the seconds it took). Leaving the block stops it if the test did not. Import with
`from devrun import dev_dashboard` (tests/ is on pytest's `pythonpath`)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from kubetrain import cli
from kubetrain.commands.dev import dev

URL = re.compile(r"^dashboard: (http://127\.0\.0\.1:\d+/)$", re.M)


@contextlib.asynccontextmanager
async def dev_dashboard(
    flags: list[str],
) -> AsyncIterator[tuple[str, io.StringIO, Callable[[], Awaitable[float]]]]:
    out = io.StringIO()
    task = asyncio.create_task(dev(cli.build_parser().parse_args(["dev", *flags]), out))

    async def stop() -> float:
        stopping = time.monotonic()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return time.monotonic() - stopping

    try:
        url = ""
        for _ in range(600):
            found = URL.search(out.getvalue())
            if found and "progress [" in out.getvalue():
                url = found.group(1)
                break
            await asyncio.sleep(0.05)
        assert url, out.getvalue()
        yield url, out, stop
    finally:
        if not task.done():
            await stop()
