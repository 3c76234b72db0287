"""The dashboard's connection limits (kubetrain.serving.guard), over real sockets: a request head
sent too slowly is closed, an idle keep-alive connection is closed, a live-update stream outlives
both deadlines, and a connection over the cap is closed at once while the others are served."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from serving import closed_within

from kubetrain.dashboard.server import DashboardServer
from kubetrain.dashboard.views.auth import LOCAL
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.dashboard.web import DashboardConfig
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.serving.guard import ConnectionLimits

from .controller_support import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def stack() -> AsyncIterator[DevStack]:
    stack = DevStack(DevStackOptions(controller=False))
    await stack.start()
    yield stack
    await stack.stop()


@contextlib.asynccontextmanager
async def dashboard(stack: DevStack, limits: ConnectionLimits) -> AsyncIterator[DashboardServer]:
    """The dashboard in local mode (no credentials to send) with `limits`, heartbeats every 0.1 s."""
    server = DashboardServer(
        stack.kube,
        stack.kube,
        served_kinds(["kubetrain.io"]),
        config=DashboardConfig(auth_mode=LOCAL, sse_heartbeat=0.1),
        port=0,
        limits=limits,
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def connect(server: DashboardServer) -> Connection:
    return await asyncio.open_connection("127.0.0.1", server.port)


async def get(conn: Connection, path: str) -> bytes:
    """Send `GET path` on a kept-alive connection; the status line (the response head read, and
    its body when it has a Content-Length)."""
    reader, writer = conn
    writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    status = await reader.readline()
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def open_stream(server: DashboardServer) -> Connection:
    """A live-update stream (`/stream`), its response head read."""
    conn = await connect(server)
    assert (await get(conn, "/stream")).startswith(b"HTTP/1.1 200")
    return conn


async def heartbeats_for(reader: asyncio.StreamReader, seconds: float) -> int:
    """Read the stream for `seconds`; how many heartbeats came (it must not end meanwhile)."""
    count = 0
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while (left := end - loop.time()) > 0:
        try:
            line = await asyncio.wait_for(reader.readline(), left)
        except TimeoutError:
            break
        assert line, "the stream was closed"
        count += line.count(b": heartbeat")
    return count


async def test_a_request_head_sent_too_slowly_or_an_idle_connection_is_closed(stack: DevStack) -> None:
    async with dashboard(stack, ConnectionLimits(header_timeout=0.3, idle_timeout=0.3)) as server:
        silent = await connect(server)
        slow = await connect(server)
        head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: " + b"x" * 100

        async def trickle() -> bool:
            """A byte every 50 ms (the head takes over 7 s): True when all of it was sent."""
            with contextlib.suppress(ConnectionError):
                for byte in head:
                    slow[1].write(bytes([byte]))
                    await slow[1].drain()
                    await asyncio.sleep(0.05)
                return True
            return False

        sender = asyncio.create_task(trickle())
        try:
            assert await closed_within(slow[0], 3)
            assert await closed_within(silent[0], 3)
            # closed while still sending: each byte arriving does not extend the deadline
            assert not (sender.done() and sender.result())
        finally:
            sender.cancel()
        assert server.guard.expired == 2
        # a request sent in time is answered and its connection kept for the next one; then it
        # is closed when it idles past 0.3 s
        kept = await connect(server)
        assert (await get(kept, "/healthz")).startswith(b"HTTP/1.1 200")
        assert (await get(kept, "/healthz")).startswith(b"HTTP/1.1 200")
        assert await closed_within(kept[0], 3)
        for _, writer in (silent, slow, kept):
            writer.close()


async def test_a_live_stream_outlives_the_head_and_idle_deadlines(stack: DevStack) -> None:
    async with dashboard(stack, ConnectionLimits(header_timeout=0.2, idle_timeout=0.2)) as server:
        reader, writer = await open_stream(server)
        # five times both deadlines: the stream stays open and keeps sending to the end
        assert await heartbeats_for(reader, 0.5) >= 1
        assert await heartbeats_for(reader, 0.5) >= 1
        assert server.guard.expired == 0
        writer.close()


async def test_connections_over_the_cap_are_closed_and_the_rest_are_served(stack: DevStack) -> None:
    async with dashboard(
        stack, ConnectionLimits(header_timeout=30, idle_timeout=30, max_connections=3)
    ) as server:
        stream = await open_stream(server)
        idle = [await connect(server) for _ in range(2)]
        await eventually(lambda: server.guard.open_connections == 3, what="3 open connections")
        over = await connect(server)
        assert await closed_within(over[0], 10)  # at once: its head deadline is 30 s away
        assert server.guard.refused == 1
        assert await heartbeats_for(stream[0], 0.3) >= 1  # the stream is not disturbed
        idle[0][1].close()
        await eventually(lambda: server.guard.open_connections == 2, what="2 open connections")
        fresh = await connect(server)
        assert (await get(fresh, "/healthz")).startswith(b"HTTP/1.1 200")
        assert server.guard.refused == 1
        for _, writer in (stream, idle[1], over, fresh):
            writer.close()


async def test_a_form_body_sent_too_slowly_gets_408_and_its_connection_is_closed(stack: DevStack) -> None:
    limits = ConnectionLimits(header_timeout=30, body_timeout=0.3, idle_timeout=30)
    async with dashboard(stack, limits) as server:
        head = (
            "POST /login HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n"
        )
        # a whole body is read (local mode has no sign-in form: 404 after reading it)
        reader, writer = await connect(server)
        writer.write((head.format(7) + "token=x").encode())
        assert (await reader.readline()).startswith(b"HTTP/1.1 404")
        writer.close()
        # a body that stops half-way: 408 after the body timeout, then the connection is closed
        reader, writer = await connect(server)
        writer.write((head.format(100) + "token=").encode())
        loop = asyncio.get_running_loop()
        sent = loop.time()
        status = await asyncio.wait_for(reader.readline(), 3)
        assert status.startswith(b"HTTP/1.1 408"), status
        assert loop.time() - sent >= 0.3
        assert await closed_within(reader, 3)
        writer.close()
