"""TLS pieces for tests that talk to a WebhookServer: a client context trusting a bundle's CA.
The fixtures built on it (`bundle`, `webhook_options`, `server`, `session`) are in
tests/unit/conftest.py."""

from __future__ import annotations

import ssl

from kubetrain.certs.generate import CertificateBundle


def client_context(bundle: CertificateBundle) -> ssl.SSLContext:
    """A client SSL context that trusts `bundle`'s CA (and checks the host name)."""
    return ssl.create_default_context(cadata=bundle.ca.cert_pem.decode())
