"""Bound service-account tokens in devcluster: the TokenRequest API, TokenReview with audiences
and pod claims, the default ServiceAccount, and the simulated kubelet's projected volumes."""

from __future__ import annotations

from typing import Any

import pytest
from pods import pod_manifest

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock

NS = "default"
AUDIENCE = "kubetrain.io/v1/namespaces/default/pytorchjobs/mnist/status"
POD_NAME = "authentication.kubernetes.io/pod-name"
POD_UID = "authentication.kubernetes.io/pod-uid"


@pytest.fixture
def devcluster_options(wall: FakeClock) -> dict[str, Any]:
    return {"clock": wall.now}


def pod(name: str, *, account: str | None = None, volumes: bool = False) -> dict[str, Any]:
    manifest = pod_manifest(name, namespace=NS, image="trainer:1")
    spec: dict[str, Any] = manifest["spec"]
    if account:
        spec["serviceAccountName"] = account
    if volumes:
        spec["volumes"] = [
            {
                "name": "trainer",
                "projected": {
                    "sources": [
                        {
                            "serviceAccountToken": {
                                "audience": AUDIENCE,
                                "expirationSeconds": 3600,
                                "path": "token",
                            }
                        },
                        {"configMap": {"name": "status-ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    ]
                },
            }
        ]
        spec["containers"][0]["volumeMounts"] = [
            {"name": "trainer", "mountPath": "/var/run/secrets/kubeflow/trainer", "readOnly": True}
        ]
    return manifest


async def create_pod(raw: RawApi, manifest: dict[str, Any]) -> dict[str, Any]:
    code, body = await raw.request("POST", f"/api/v1/namespaces/{NS}/pods", body=manifest)
    assert code == 201, body
    return dict(body)


async def token_request(raw: RawApi, spec: dict[str, Any], account: str = "default") -> tuple[int, Any]:
    return await raw.request(
        "POST",
        f"/api/v1/namespaces/{NS}/serviceaccounts/{account}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )


async def review(raw: RawApi, token: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences is not None:
        spec["audiences"] = audiences
    code, body = await raw.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec},
    )
    assert code == 201, body
    return dict(body["status"])


async def bound_token(raw: RawApi, p: dict[str, Any], seconds: int = 3600) -> str:
    ref = {"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}
    code, body = await token_request(
        raw, {"audiences": [AUDIENCE], "expirationSeconds": seconds, "boundObjectRef": ref}
    )
    assert code == 201, body
    return str(body["status"]["token"])


async def test_every_namespace_has_a_default_service_account(devcluster: DevCluster, raw: RawApi) -> None:
    await raw.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "team-a"}})
    await devcluster.settle()
    assert devcluster.get_object("serviceaccounts", "team-a", "default") is not None
    assert devcluster.get_object("serviceaccounts", "default", "default") is not None
    await raw.request("DELETE", "/api/v1/namespaces/team-a/serviceaccounts/default")
    await devcluster.settle()
    assert devcluster.get_object("serviceaccounts", "team-a", "default") is not None  # re-created


async def test_pod_bound_token_reviews_with_its_audience_and_pod_claims(
    devcluster: DevCluster, raw: RawApi
) -> None:
    await devcluster.settle()
    p = await create_pod(raw, pod("worker-0"))
    token = await bound_token(raw, p)
    status = await review(raw, token, [AUDIENCE, "other"])
    assert status["authenticated"] is True
    assert status["audiences"] == [AUDIENCE]
    assert status["user"]["username"] == "system:serviceaccount:default:default"
    assert status["user"]["extra"][POD_NAME] == ["worker-0"]
    assert status["user"]["extra"][POD_UID] == [p["metadata"]["uid"]]
    # The token is for its own audience only: not the API server's, not another job's.
    assert "authenticated" not in await review(raw, token)
    wrong = await review(raw, token, ["kubetrain.io/v1/namespaces/default/pytorchjobs/other/status"])
    assert "is invalid for the target audiences" in wrong["error"]
    code, _ = await raw.request(
        "DELETE", f"/api/v1/namespaces/{NS}/pods/worker-0", query={"gracePeriodSeconds": "0"}
    )
    assert code == 200
    assert (await review(raw, token, [AUDIENCE]))["error"].endswith(
        "service account token has been invalidated]"
    )


async def test_a_token_expires_and_a_plain_account_token_has_no_pod(
    devcluster: DevCluster, raw: RawApi, wall: FakeClock
) -> None:
    await devcluster.settle()
    p = await create_pod(raw, pod("worker-1"))
    token = await bound_token(raw, p, seconds=600)
    plain_code, plain = await token_request(raw, {"audiences": [AUDIENCE]})
    assert plain_code == 201
    status = await review(raw, plain["status"]["token"], [AUDIENCE])
    assert status["authenticated"] is True and POD_NAME not in status["user"]["extra"]
    assert (await review(raw, token, [AUDIENCE]))["authenticated"] is True
    await wall.advance(600)
    assert (await review(raw, token, [AUDIENCE]))["error"].endswith("service account token has expired]")


async def test_token_request_is_validated_like_kube(devcluster: DevCluster, raw: RawApi) -> None:
    await devcluster.settle()
    p = await create_pod(raw, pod("worker-2"))
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "worker-2", "uid": p["metadata"]["uid"]}
    code, body = await token_request(raw, {"expirationSeconds": 599, "boundObjectRef": ref})
    assert code == 422 and "may not specify a duration less than 10 minutes" in body["message"]
    code, body = await token_request(raw, {"boundObjectRef": {**ref, "uid": "not-it"}})
    assert code == 409 and "does not match the UID in record" in body["message"]
    code, body = await token_request(raw, {"boundObjectRef": {**ref, "name": "gone"}})
    assert code == 404
    code, body = await token_request(raw, {}, account="nobody")
    assert code == 404 and 'serviceaccounts "nobody" not found' in body["message"]
    await raw.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", body={"metadata": {"name": "bot"}})
    code, body = await token_request(raw, {"boundObjectRef": ref}, account="bot")
    assert code == 400 and "different serviceaccount name" in body["message"]


async def test_kubelet_projects_a_pod_bound_token_and_configmap(devcluster: DevCluster, raw: RawApi) -> None:
    await devcluster.settle()
    sim_clock = FakeClock()
    async with PodSimulator(devcluster.kubeconfig_path, nodes=1, clock=sim_clock) as sim:
        p = await create_pod(raw, pod("trainer-0", volumes=True))
        # The ConfigMap is missing: the mount fails and the bound pod does not start...
        await sim.wait_for(NS, "trainer-0", lambda q: bool(q and q["spec"].get("nodeName")))
        with pytest.raises(TimeoutError):
            await sim.wait_for_phase(NS, "trainer-0", "Running", wait_seconds=0.3)
        # ...until the ConfigMap exists: the mount is retried, as the kubelet's volume manager does.
        await raw.request(
            "POST",
            f"/api/v1/namespaces/{NS}/configmaps",
            body={"metadata": {"name": "status-ca"}, "data": {"ca.crt": "PEM"}},
        )
        await sim.wait_for_phase(NS, "trainer-0", "Running")
        files = await sim.files(NS, "trainer-0")
        assert files["/var/run/secrets/kubeflow/trainer/ca.crt"] == "PEM"
        status = await review(raw, files["/var/run/secrets/kubeflow/trainer/token"], [AUDIENCE])
        assert status["user"]["extra"][POD_UID] == [p["metadata"]["uid"]]
        assert status["user"]["extra"]["authentication.kubernetes.io/node-name"] == [sim.node_names[0]]
