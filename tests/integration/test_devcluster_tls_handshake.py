"""devcluster's API server bounds its TLS handshakes, as kubetrain's own servers do: a client that
opens a connection and never sends its ClientHello (or stops half-way through it) is closed after
the handshake timeout instead of holding the connection for asyncio's 60 s; a TLS client is
served."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from serving import assert_handshakes_bounded

from kubetrain.devcluster import DevCluster


async def test_an_unfinished_tls_handshake_is_closed_and_a_tls_client_is_served() -> None:
    async with DevCluster(handshake_timeout=0.3) as cluster:
        port = urlsplit(cluster.url).port
        assert port is not None
        await assert_handshakes_bounded(port, cluster.ca_pem, "/version")


def test_the_handshake_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="handshake timeout must be more than 0 seconds, not 0"):
        DevCluster(handshake_timeout=0)
