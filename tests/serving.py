"""Pieces for the tests of kubetrain's servers: a free loopback port to serve on, and (for the
connection guard, kubetrain.serving.guard) whether the server closed a connection. Import with
`from serving import closed_within, free_port` (tests/ is on pytest's `pythonpath`)."""

from __future__ import annotations

import asyncio
import random
import socket
import ssl
from pathlib import Path


def _below_ephemeral() -> range:
    """Ports below the kernel's ephemeral range: it never gives one of these to a socket that
    connects or binds port 0, so a port found free here stays free until the test binds it
    (unless another test picks it, which `free_port`'s random choice makes unlikely)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default
    return range(10000, max(low, 10001))


_PORTS = _below_ephemeral()
_GIVEN: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now, never handed out before in this process.

    Not a port the kernel picks (bind to port 0): the kernel hands the same ephemeral ports to
    the many client connections the tests open, and one of them could take the port between
    this check and the server's bind."""
    rng = random.SystemRandom()
    for _ in range(1000):
        port = rng.choice(_PORTS)
        if port in _GIVEN:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise RuntimeError(f"no free port on 127.0.0.1 in {_PORTS.start}-{_PORTS.stop - 1}")


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True when the server ends the connection (EOF, a reset, or a TLS close) within `seconds`,
    reading and dropping whatever it still sends; False when it is still open then."""
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except (ConnectionError, ssl.SSLError):
        pass
    return True


async def assert_handshakes_bounded(port: int, ca_pem: str, path: str, *, within: float = 3) -> None:
    """The TLS server on 127.0.0.1:`port` closes, within `within` seconds, a connection that never
    sends its ClientHello and one that stops half-way through it, and serves `GET path` (200) to a
    client that completes its handshake (verifying the server as `localhost` against `ca_pem`)."""
    silent_reader, silent = await asyncio.open_connection("127.0.0.1", port)
    partial_reader, partial = await asyncio.open_connection("127.0.0.1", port)
    partial.write(bytes.fromhex("16030100c8010000c40303"))  # the first bytes of a ClientHello
    try:
        assert await closed_within(silent_reader, within)
        assert await closed_within(partial_reader, within)
        ctx = ssl.create_default_context(cadata=ca_pem)
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=ctx, server_hostname="localhost"
        )
        writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        assert (await reader.readline()).startswith(b"HTTP/1.1 200")
        writer.close()
    finally:
        silent.close()
        partial.close()
