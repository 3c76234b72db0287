"""Pieces for the tests of kubetrain's servers: a free loopback port to serve on, and (for the
connection guard, kubetrain.serving.guard) whether the server closed a connection. Import with
`from serving import closed_within, free_port` (tests/ is on pytest's `pythonpath`)."""

from __future__ import annotations

import asyncio
import socket
import ssl


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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
