"""The metrics port of the long-running commands: plain HTTP, or with `--metrics-secure` HTTPS
plus bearer-token authentication and authorization of /metrics.

```python
health = await metrics_server(args)      # a kubetrain.serving.health.HealthServer, not started
await health.start(); ...; await health.stop()
```

The certificate is `--metrics-cert-dir`'s (tls.crt/tls.key, hot-reloaded) or, without it, a
self-signed one generated at start for the host name, `localhost` and 127.0.0.1 and written to a
private temporary directory removed at stop (Prometheus then scrapes with
`insecureSkipVerify`, or with the CA of a certificate given in `--metrics-cert-dir`).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import tempfile
import time
from collections.abc import Callable

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import ReloadingTLS, write_cert_dir
from kubetrain.kube.access import AccessReviews
from kubetrain.kube.client import KubeClient
from kubetrain.serving.auth import MetricsAuthorizer
from kubetrain.serving.health import HealthServer


def self_signed_cert_dir() -> str:
    """A private temporary directory holding a freshly generated tls.crt/tls.key/ca.crt."""
    directory = tempfile.mkdtemp(prefix="kubetrain-metrics-certs-")
    bundle = generate_bundle(sorted({socket.gethostname(), "localhost"}), ["127.0.0.1"])
    write_cert_dir(directory, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    return directory


async def metrics_server(
    args: argparse.Namespace, *, clock: Callable[[], float] = time.monotonic
) -> HealthServer:
    """The HealthServer the flags ask for (`--metrics-*`); `clock` times the decision caches."""
    unix_path = getattr(args, "metrics_unix_socket", None)
    if not getattr(args, "metrics_secure", False):
        return HealthServer(host=args.metrics_bind_address, port=args.metrics_port, unix_path=unix_path)
    cert_dir = args.metrics_cert_dir
    temporary = cert_dir is None
    if cert_dir is None:
        cert_dir = self_signed_cert_dir()
    client = await KubeClient.connect(args.kubeconfig)

    async def cleanup() -> None:
        await client.close()
        if temporary:
            shutil.rmtree(cert_dir, ignore_errors=True)

    return HealthServer(
        host=args.metrics_bind_address,
        port=args.metrics_port,
        tls=ReloadingTLS(cert_dir),
        auth=MetricsAuthorizer(AccessReviews(client), clock=clock),
        on_stop=[cleanup],
        unix_path=unix_path,
    )
