"""devcluster's API server bounds its TLS handshakes, as kubetrain's own servers do: a client that
opens a connection and never sends its ClientHello (or stops half-way through it) is closed after
the handshake timeout instead of holding the connection for asyncio's 60 s; a TLS client is
served."""

from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlsplit

import pytest
from serving import closed_within

from kubetrain.devcluster import DevCluster


async def test_an_unfinished_tls_handshake_is_closed_and_a_tls_client_is_served() -> None:
    async with DevCluster(handshake_timeout=0.3) as cluster:
        port = urlsplit(cluster.url).port
        silent_reader, silent = await asyncio.open_connection("127.0.0.1", port)
        partial_reader, partial = await asyncio.open_connection("127.0.0.1", port)
        partial.write(bytes.fromhex("16030100c8010000c40303"))
        assert await closed_within(silent_reader, 3)
        assert await closed_within(partial_reader, 3)
        client_ctx = ssl.create_default_context(cadata=cluster.ca_pem)
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_ctx, server_hostname="localhost"
        )
        writer.write(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert (await reader.readline()).startswith(b"HTTP/1.1 200")
        for w in (writer, silent, partial):
            w.close()


def test_the_handshake_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="handshake timeout must be more than 0 seconds, not 0"):
        DevCluster(handshake_timeout=0)
