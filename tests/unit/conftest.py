"""Fixtures of the webhook server tests: a certificate bundle for localhost, a started
WebhookServer serving it (options from the module's `webhook_options` fixture), and an aiohttp
session trusting its CA."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from webhooks import client_context

from kubetrain.certs.generate import CertificateBundle, generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.webhook.server import WebhookServer


@pytest.fixture(scope="module")
def bundle() -> CertificateBundle:
    return generate_bundle(["localhost"], ["127.0.0.1"])


@pytest.fixture
def webhook_options() -> dict[str, Any]:
    """Extra WebhookServer arguments; a module overrides this fixture to set them."""
    return {}


@pytest.fixture
async def server(
    tmp_path: Path, bundle: CertificateBundle, webhook_options: dict[str, Any]
) -> AsyncIterator[WebhookServer]:
    write_cert_dir(tmp_path, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    srv = WebhookServer(
        cert_dir=str(tmp_path), host="127.0.0.1", port=0, cert_poll_interval=3600, **webhook_options
    )
    await srv.start()
    yield srv
    await srv.stop()


@pytest.fixture
async def session(bundle: CertificateBundle) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_context(bundle))) as s:
        yield s
