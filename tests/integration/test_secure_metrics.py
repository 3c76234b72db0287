"""`--metrics-secure`: /metrics over HTTPS, authenticated with a TokenReview and authorized with a
SubjectAccessReview against a devcluster that enforces RBAC, as a Prometheus scrape sees it.

The metrics server is the one the commands build (`kubetrain.commands._metrics.metrics_server`)
from flags, with its self-signed certificate (verified here against the CA it was generated
with) and a fake clock for the decision caches.
"""

from __future__ import annotations

import argparse
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubetrain.commands._metrics import metrics_server
from kubetrain.devcluster import DevCluster
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import NAMESPACES, SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, ResourceRef
from kubetrain.serving.health import HealthServer

RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = ResourceRef(RBAC, "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = ResourceRef(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False)
SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True)
PROMETHEUS = "system:serviceaccount:monitoring:prometheus"


class Ticks:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def devcluster_options() -> dict[str, Any]:
    return {"authorization": "RBAC"}


@pytest.fixture
async def admin(kube: KubeClient) -> KubeClient:
    await kube.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}}
    )
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": "prometheus"}}, namespace="monitoring")
    await kube.create(
        CLUSTER_ROLES,
        {
            "metadata": {"name": "kubetrain-metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    return kube


@pytest.fixture
async def clock() -> Ticks:
    return Ticks()


@pytest.fixture
async def server(devcluster: DevCluster, admin: KubeClient, clock: Ticks) -> AsyncIterator[HealthServer]:
    args = argparse.Namespace(
        metrics_secure=True,
        metrics_cert_dir=None,
        kubeconfig=devcluster.kubeconfig_path,
        metrics_bind_address="127.0.0.1",
        metrics_port=0,
    )
    health = await metrics_server(args, clock=clock)
    await health.start()
    yield health
    await health.stop()


async def scrape(server: HealthServer, path: str = "/metrics", token: str | None = None) -> tuple[int, str]:
    assert server.tls is not None
    ctx = ssl.create_default_context(cafile=str(server.tls.cert_dir / "ca.crt"))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://localhost:{server.port}{path}", headers=headers, ssl=ctx) as resp,
    ):
        return resp.status, await resp.text()


def reviews(devcluster: DevCluster) -> int:
    return devcluster.requests.count("create", "tokenreviews") + devcluster.requests.count(
        "create", "subjectaccessreviews"
    )


async def bind_reader(admin: KubeClient) -> None:
    await admin.create(
        CLUSTER_ROLE_BINDINGS,
        {
            "metadata": {"name": "prometheus-kubetrain-metrics"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "kubetrain-metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}],
        },
    )


async def test_without_a_token_metrics_is_401_and_probes_stay_open(server: HealthServer) -> None:
    status, body = await scrape(server)
    assert status == 401
    assert json.loads(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "details": {},
        "code": 401,
    }
    assert (await scrape(server, "/healthz"))[0] == 200
    assert (await scrape(server, "/readyz"))[0] == 200
    assert (await scrape(server, "/metrics", token="not-a-token-the-cluster-knows"))[0] == 401


async def test_without_the_rule_403_then_200_once_bound_and_cached_in_between(
    devcluster: DevCluster, admin: KubeClient, server: HealthServer, clock: Ticks
) -> None:
    token = devcluster.add_service_account_token("monitoring", "prometheus")
    status, body = await scrape(server, token=token)
    assert status == 403
    status_obj = json.loads(body)
    assert status_obj["reason"] == "Forbidden" and status_obj["code"] == 403
    assert status_obj["message"].startswith(f'forbidden: User "{PROMETHEUS}" cannot get path "/metrics"')

    await bind_reader(admin)
    before = reviews(devcluster)
    assert (await scrape(server, token=token))[0] == 403  # the denial is cached for 10 s
    assert reviews(devcluster) == before

    clock.now += 10.0
    status, body = await scrape(server, token=token)
    assert status == 200
    assert "kubetrain_api_requests_total" in body
    assert reviews(devcluster) == before + 2  # a TokenReview and a SubjectAccessReview

    status, _ = await scrape(server, token=token)
    assert status == 200
    assert reviews(devcluster) == before + 2  # a cache hit makes no API call


async def test_token_of_a_deleted_service_account_stops_working_after_the_cache(
    devcluster: DevCluster, admin: KubeClient, server: HealthServer, clock: Ticks
) -> None:
    token = devcluster.add_service_account_token("monitoring", "prometheus")
    await bind_reader(admin)
    assert (await scrape(server, token=token))[0] == 200
    await admin.delete(SERVICE_ACCOUNTS, "monitoring", "prometheus")
    assert (await scrape(server, token=token))[0] == 200
    clock.now += 10.0
    assert (await scrape(server, token=token))[0] == 401


async def test_devcluster_reviews_follow_the_api(devcluster: DevCluster, admin: KubeClient) -> None:
    token = devcluster.add_service_account_token("monitoring", "prometheus")
    answer = await admin.create(
        TOKEN_REVIEWS,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
    )
    assert answer["status"]["authenticated"] is True
    assert answer["status"]["user"]["username"] == PROMETHEUS
    assert "system:serviceaccounts:monitoring" in answer["status"]["user"]["groups"]
    unknown = await admin.create(TOKEN_REVIEWS, {"spec": {"token": "nope"}})
    assert unknown["status"].get("authenticated") is not True
    with pytest.raises(ApiError) as bad:
        await admin.create(TOKEN_REVIEWS, {"spec": {}})
    assert bad.value.status == 400

    def sar(spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}

    metrics = {
        "user": PROMETHEUS,
        "groups": ["system:serviceaccounts"],
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    assert (await admin.create(SUBJECT_ACCESS_REVIEWS, sar(metrics)))["status"]["allowed"] is False
    await bind_reader(admin)
    allowed = await admin.create(SUBJECT_ACCESS_REVIEWS, sar(metrics))
    assert allowed["status"]["allowed"] is True
    assert "prometheus-kubetrain-metrics" in allowed["status"]["reason"]
    pods = {"user": PROMETHEUS, "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "x"}}
    assert (await admin.create(SUBJECT_ACCESS_REVIEWS, sar(pods)))["status"]["allowed"] is False
    admin_pods = {
        "user": "someone",
        "groups": ["system:masters"],
        "resourceAttributes": pods["resourceAttributes"],
    }
    assert (await admin.create(SUBJECT_ACCESS_REVIEWS, sar(admin_pods)))["status"]["allowed"] is True
    for spec in ({"user": "u"}, {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}):
        with pytest.raises(ApiError) as invalid:
            await admin.create(SUBJECT_ACCESS_REVIEWS, sar(spec))
        assert invalid.value.status == 422


async def test_a_service_account_without_the_review_rules_cannot_review(
    devcluster: DevCluster, admin: KubeClient, tmp_path: Path
) -> None:
    token = devcluster.add_service_account_token("monitoring", "prometheus")
    client = await KubeClient.connect(devcluster.write_token_kubeconfig(str(tmp_path / "kc"), token))
    try:
        with pytest.raises(ApiError) as refused:
            await client.create(TOKEN_REVIEWS, {"spec": {"token": token}})
        assert refused.value.status == 403
    finally:
        await client.close()
