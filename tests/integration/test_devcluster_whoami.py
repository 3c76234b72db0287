"""SelfSubjectReview (authentication.k8s.io/v1) in devcluster, as kube-apiserver answers it: the
requester's own user info, after impersonation; any authenticated user may ask, nobody else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubetrain.devcluster import DevCluster
from kubetrain.kube.asuser import AsUser, anonymous_client
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import NAMESPACES, SELF_SUBJECT_REVIEWS, ResourceRef

SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True)
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


@pytest.fixture
def devcluster_options() -> dict[str, Any]:
    return {"authorization": "RBAC"}


@pytest.fixture
def admin(kube: KubeClient) -> KubeClient:
    return kube


async def test_the_answer_is_who_the_request_authenticated_as(
    devcluster: DevCluster, admin: KubeClient, tmp_path: Path
) -> None:
    mine = await admin.create(SELF_SUBJECT_REVIEWS, dict(REVIEW))
    assert mine["kind"] == "SelfSubjectReview" and mine["apiVersion"] == "authentication.k8s.io/v1"
    assert mine["status"]["userInfo"]["username"] == "kubetrain-admin"
    assert "system:masters" in mine["status"]["userInfo"]["groups"]
    assert mine["metadata"]["creationTimestamp"]
    # the body's status is not echoed: a requester cannot claim to be someone else
    claimed = await admin.create(SELF_SUBJECT_REVIEWS, {**REVIEW, "status": {"userInfo": {"username": "x"}}})
    assert claimed["status"]["userInfo"]["username"] == "kubetrain-admin"

    await admin.create(NAMESPACES, {"metadata": {"name": "team-a"}})
    await admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": "alice"}}, namespace="team-a")
    token = devcluster.add_service_account_token("team-a", "alice")
    alice = await KubeClient.connect(devcluster.write_token_kubeconfig(str(tmp_path / "kc"), token))
    try:
        info = (await alice.create(SELF_SUBJECT_REVIEWS, dict(REVIEW)))["status"]["userInfo"]
    finally:
        await alice.close()
    assert info["username"] == "system:serviceaccount:team-a:alice"
    assert {"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"} <= set(
        info["groups"]
    )

    bob = AsUser(admin, [("Impersonate-User", "bob"), ("Impersonate-Group", "ml")])
    info = (await bob.create(SELF_SUBJECT_REVIEWS, dict(REVIEW)))["status"]["userInfo"]
    assert info["username"] == "bob" and "ml" in info["groups"]


async def test_a_wrong_kind_is_a_bad_request_and_anonymous_is_forbidden(
    devcluster: DevCluster, admin: KubeClient
) -> None:
    with pytest.raises(ApiError) as bad:
        await admin.create(SELF_SUBJECT_REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "Pod"})
    assert bad.value.status == 400
    nobody = await anonymous_client(devcluster.kubeconfig_path)
    try:
        with pytest.raises(ApiError) as refused:
            await nobody.create(SELF_SUBJECT_REVIEWS, dict(REVIEW))
    finally:
        await nobody.close()
    assert refused.value.status == 403
