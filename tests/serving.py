"""Pieces for the tests of the servers' connection guard (kubetrain.serving.guard): whether the
server closed a connection. Import with `from serving import closed_within` (tests/ is on
pytest's `pythonpath`)."""

from __future__ import annotations

import asyncio
import ssl


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
