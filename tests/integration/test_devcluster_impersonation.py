"""devcluster's user impersonation against kube-apiserver's rules (WithImpersonation): who may
impersonate whom, the 403 and 400 answers, and the groups the impersonated user gets."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster import DevCluster
from kubetrain.kube.asuser import AsUser
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import PODS, ResourceRef

CLUSTER_ROLES = ResourceRef("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = ResourceRef(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)
SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True)


@pytest.fixture
def devcluster_options() -> dict[str, Any]:
    return {"authorization": "RBAC"}


async def bind(kube: KubeClient, name: str, rules: list[dict[str, Any]], subject: dict[str, Any]) -> None:
    await kube.create(CLUSTER_ROLES, {"metadata": {"name": name}, "rules": rules})
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [subject],
    }
    await kube.create(CLUSTER_ROLE_BINDINGS, binding)


async def test_impersonation_is_authorized_per_user_and_group(devcluster: DevCluster, tmp_path: Any) -> None:
    async with await KubeClient.connect(devcluster.kubeconfig_path, qps=0) as admin:
        await admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": "proxy"}}, namespace="default")
        token = devcluster.add_service_account_token("default", "proxy")
        await bind(
            admin,
            "impersonate-bob",
            [
                {
                    "apiGroups": [""],
                    "resources": ["users"],
                    "verbs": ["impersonate"],
                    "resourceNames": ["bob"],
                },
                {
                    "apiGroups": [""],
                    "resources": ["groups"],
                    "verbs": ["impersonate"],
                    "resourceNames": ["readers"],
                },
            ],
            {"kind": "ServiceAccount", "name": "proxy", "namespace": "default"},
        )
        await bind(
            admin,
            "readers",
            [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
            {"kind": "Group", "name": "readers", "apiGroup": "rbac.authorization.k8s.io"},
        )
        path = devcluster.write_token_kubeconfig(str(tmp_path / "proxy"), token)
        async with await KubeClient.connect(path, qps=0) as proxy:
            bob = AsUser(proxy, [("Impersonate-User", "bob")])
            with pytest.raises(ApiError) as denied:
                await bob.list(PODS, "default")
            assert denied.value.status == 403
            assert 'User "bob" cannot list resource "pods"' in denied.value.message
            reader = AsUser(proxy, [("Impersonate-User", "bob"), ("Impersonate-Group", "readers")])
            assert "items" in await reader.list(PODS, "default")
            assert await reader.can(verb="list", group="", resource="pods")
            carol = AsUser(proxy, [("Impersonate-User", "carol")])
            with pytest.raises(ApiError) as refused:
                await carol.list(PODS, "default")
            assert refused.value.status == 403
            assert refused.value.message == (
                'users "carol" is forbidden: User "system:serviceaccount:default:proxy" cannot impersonate '
                'resource "users" in API group "" at the cluster scope'
            )
            admins = AsUser(proxy, [("Impersonate-User", "bob"), ("Impersonate-Group", "system:masters")])
            with pytest.raises(ApiError) as escalation:
                await admins.list(PODS, "default")
            assert (
                escalation.value.status == 403
                and 'groups "system:masters" is forbidden' in escalation.value.message
            )
            groupless = AsUser(proxy, [("Impersonate-Group", "readers")])
            with pytest.raises(ApiError) as bad:
                await groupless.list(PODS, "default")
            assert bad.value.status == 400
