"""What `--metrics-secure` costs a scrape: plain HTTP vs HTTPS with a cached decision vs HTTPS
with a TokenReview + SubjectAccessReview each time (cache disabled), against a devcluster with
RBAC in this process (loopback only).

    .venv/bin/python benchmarks/bench_secure_metrics.py [--scrapes 200]

Each scrape is a new connection (as Prometheus' default keep-alive would not be across 30 s);
prints the median and p95 per scrape in milliseconds, and the API calls made, as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from typing import Any

import aiohttp

from kubetrain.certs.tls import ReloadingTLS
from kubetrain.commands._metrics import self_signed_cert_dir
from kubetrain.devcluster import DevCluster
from kubetrain.kube.access import AccessReviews
from kubetrain.kube.client import KubeClient
from kubetrain.kube.resources import NAMESPACES, ResourceRef
from kubetrain.serving.auth import MetricsAuthorizer
from kubetrain.serving.health import HealthServer

RBAC = "rbac.authorization.k8s.io"


async def scrape_times(url: str, token: str | None, n: int) -> list[float]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    out: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        async with (
            aiohttp.ClientSession() as session,
            session.get(url, headers=headers, ssl=False) as resp,
        ):
            await resp.read()
            assert resp.status == 200, resp.status
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(len(times) * 0.95)], 2)}


async def main(scrapes: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as workdir:
        async with DevCluster(workdir=workdir, authorization="RBAC") as cluster:
            admin = await KubeClient.connect(cluster.kubeconfig_path)
            await admin.create(NAMESPACES, {"metadata": {"name": "monitoring"}})
            await admin.create(
                ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True),
                {"metadata": {"name": "prometheus"}},
                namespace="monitoring",
            )
            await admin.create(
                ResourceRef(RBAC, "v1", "clusterroles", "ClusterRole", False),
                {
                    "metadata": {"name": "reader"},
                    "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
                },
            )
            await admin.create(
                ResourceRef(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False),
                {
                    "metadata": {"name": "reader"},
                    "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}],
                },
            )
            token = cluster.add_service_account_token("monitoring", "prometheus")
            cert_dir = self_signed_cert_dir()
            plain = HealthServer(host="127.0.0.1", port=0)
            cases = {"plain_http": (plain, None)}
            for name, ttl in (("https_cached", 10.0), ("https_review_each_time", 0.0)):
                auth = MetricsAuthorizer(AccessReviews(admin), clock=time.monotonic, ttl=ttl)
                server = HealthServer(host="127.0.0.1", port=0, tls=ReloadingTLS(cert_dir), auth=auth)
                cases[name] = (server, token)
            for name, (server, tok) in cases.items():
                await server.start()
                try:
                    before = cluster.requests.total
                    times = await scrape_times(
                        f"{server.scheme}://127.0.0.1:{server.port}/metrics", tok, scrapes
                    )
                    results[name] = {**summary(times), "api_calls": cluster.requests.total - before}
                finally:
                    await server.stop()
            await admin.close()
    return {"scrapes": scrapes, **results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=200)
    print(json.dumps(asyncio.run(main(parser.parse_args().scrapes)), indent=2))
