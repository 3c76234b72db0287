"""The dashboard served over TLS bounds its handshakes, as the webhook and health ports do: a
client that opens a connection and never finishes its ClientHello (or stops half-way through it)
is closed after the handshake timeout instead of holding the connection for asyncio's 60 s; a
client that completes its handshake is served."""

from __future__ import annotations

import ssl
from pathlib import Path

from serving import assert_handshakes_bounded

from kubetrain.certs.generate import CertificateBundle, generate_bundle
from kubetrain.dashboard.server import DashboardServer
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.serving.guard import ConnectionLimits


def serving_context(bundle: CertificateBundle, directory: Path) -> ssl.SSLContext:
    """A server-side TLS context for `bundle`'s serving certificate (written into `directory`)."""
    cert, key = directory / "tls.crt", directory / "tls.key"
    cert.write_bytes(bundle.serving.cert_pem)
    key.write_bytes(bundle.serving.key_pem)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    return ctx


async def test_an_unfinished_tls_handshake_is_closed(tmp_path: Path) -> None:
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    server_ctx = serving_context(bundle, tmp_path)
    stack = DevStack(DevStackOptions(controller=False))
    await stack.start()
    try:
        server = DashboardServer(
            stack.kube,
            stack.kube,
            served_kinds(["kubetrain.io"]),
            port=0,
            ssl_context=server_ctx,
            limits=ConnectionLimits(header_timeout=0.3),
        )
        await server.start()
        try:
            await assert_handshakes_bounded(server.port, bundle.ca.cert_pem.decode(), "/healthz")
        finally:
            await server.stop()
    finally:
        await stack.stop()
