"""devcluster with `authorization="RBAC"`: ServiceAccount tokens, bindings and 403s as kube-apiserver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import NAMESPACES, PODS, SECRETS, ResourceRef

RBAC = "rbac.authorization.k8s.io"
ROLES = ResourceRef(RBAC, "v1", "roles", "Role", True)
ROLE_BINDINGS = ResourceRef(RBAC, "v1", "rolebindings", "RoleBinding", True)
CLUSTER_ROLES = ResourceRef(RBAC, "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = ResourceRef(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False)
SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True)
USER = "system:serviceaccount:ops:bot"

Obj = dict[str, Any]


@pytest.fixture
def devcluster_options() -> dict[str, Any]:
    return {"authorization": "RBAC"}


@pytest.fixture
async def admin(kube: KubeClient) -> KubeClient:
    for ns in ("ops", "other"):
        await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": "bot"}}, namespace="ops")
    return kube


@pytest.fixture
async def bot(devcluster: DevCluster, admin: KubeClient, tmp_path: Path) -> AsyncIterator[KubeClient]:
    token = devcluster.add_service_account_token("ops", "bot")
    client = await KubeClient.connect(devcluster.write_token_kubeconfig(str(tmp_path / "bot"), token))
    yield client
    await client.close()


def binding(kind: str, name: str, role_kind: str, role: str, namespace: str | None = None) -> Obj:
    md: Obj = {"name": name}
    if namespace:
        md["namespace"] = namespace
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": kind,
        "metadata": md,
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "ops"}],
    }


async def refused(call: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        await call
    assert info.value.status == 403, info.value
    return info.value


async def test_a_service_account_starts_with_discovery_only(devcluster: DevCluster, bot: KubeClient) -> None:
    assert await bot.has_api("coordination.k8s.io", "v1", "leases")  # system:discovery
    err = await refused(bot.list(PODS, "ops"))
    assert err.message == (
        f'pods is forbidden: User "{USER}" cannot list resource "pods" in API group "" in the namespace "ops"'
    )
    err = await refused(bot.get(CLUSTER_ROLES, None, "cluster-admin"))
    assert err.message == (
        f'clusterroles.{RBAC} "cluster-admin" is forbidden: User "{USER}" cannot get resource '
        f'"clusterroles" in API group "{RBAC}" at the cluster scope'
    )
    assert [(d.user, d.verb, d.resource, d.namespace) for d in devcluster.denials] == [
        (USER, "list", "pods", "ops"),
        (USER, "get", "clusterroles", ""),
    ]
    assert devcluster.requests.count(verb="list", resource="pods") == 1  # denied requests are counted
    assert [r.code for r in devcluster.requests.records if r.user == USER] == [403, 403]


async def test_role_binding_grants_in_its_namespace_only(admin: KubeClient, bot: KubeClient) -> None:
    role = {
        "metadata": {"name": "pods"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    }
    await admin.create(ROLES, role, namespace="ops")
    await admin.create(ROLE_BINDINGS, binding("RoleBinding", "pods", "Role", "pods"), namespace="ops")
    assert (await bot.list(PODS, "ops"))["items"] == []
    await refused(bot.list(PODS, "other"))
    await refused(bot.list(PODS, None))  # across all namespaces needs a ClusterRoleBinding
    await refused(bot.get(PODS, "ops", "p"))  # list does not grant get
    # A ClusterRole through a ClusterRoleBinding applies everywhere.
    cluster_role = {
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    }
    await admin.create(CLUSTER_ROLES, cluster_role)
    await admin.create(
        CLUSTER_ROLE_BINDINGS, binding("ClusterRoleBinding", "pod-reader", "ClusterRole", "pod-reader")
    )
    assert (await bot.list(PODS, None))["items"] == []
    assert (await bot.list(PODS, "other"))["items"] == []


async def test_resource_names_restrict_get_and_a_named_watch(admin: KubeClient, bot: KubeClient) -> None:
    role = {
        "metadata": {"name": "tls"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": ["tls"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    await admin.create(ROLES, role, namespace="ops")
    await admin.create(ROLE_BINDINGS, binding("RoleBinding", "tls", "Role", "tls"), namespace="ops")
    for name in ("tls", "other"):
        await admin.create(SECRETS, {"metadata": {"name": name}, "data": {}}, namespace="ops")
    assert (await bot.get(SECRETS, "ops", "tls"))["metadata"]["name"] == "tls"
    await refused(bot.get(SECRETS, "ops", "other"))
    # list/watch: allowed only with a metadata.name field selector naming an allowed object.
    await refused(bot.list(SECRETS, "ops"))
    listed = await bot.list(SECRETS, "ops", field_selector="metadata.name=tls")
    assert [s["metadata"]["name"] for s in listed["items"]] == ["tls"]
    await refused(bot.list(SECRETS, "ops", field_selector="metadata.name=other"))
    events = bot.watch(SECRETS, "ops", field_selector="metadata.name=tls", timeout_seconds=1)
    try:
        etype, obj = await anext(events)
        assert (etype, obj["metadata"]["name"]) == ("ADDED", "tls")
    finally:
        await events.aclose()


async def test_a_binding_to_a_missing_role_says_so(admin: KubeClient, bot: KubeClient) -> None:
    await admin.create(ROLE_BINDINGS, binding("RoleBinding", "dangling", "Role", "nope"), namespace="ops")
    err = await refused(bot.list(PODS, "ops"))
    assert err.message.endswith(f': RBAC: role.{RBAC} "nope" not found')


async def test_role_ref_is_immutable(admin: KubeClient) -> None:
    created = await admin.create(ROLE_BINDINGS, binding("RoleBinding", "b", "Role", "a"), namespace="ops")
    created["roleRef"]["name"] = "b"
    with pytest.raises(ApiError) as info:
        await admin.replace(ROLE_BINDINGS, created)
    assert info.value.status == 422
    assert "cannot change roleRef" in info.value.message


async def test_a_token_of_a_missing_service_account_is_unauthorized(
    devcluster: DevCluster, tmp_path: Path
) -> None:
    token = devcluster.add_service_account_token("ops", "ghost")
    client = await KubeClient.connect(devcluster.write_token_kubeconfig(str(tmp_path / "ghost"), token))
    try:
        with pytest.raises(ApiError) as info:
            await client.list(PODS, "default")
        assert info.value.status == 401
    finally:
        await client.close()


async def test_without_authorization_every_authenticated_request_is_allowed(tmp_path: Path) -> None:
    async with DevCluster(workdir=str(tmp_path / "dc")) as dc:
        admin = await KubeClient.connect(dc.kubeconfig_path)
        await admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": "bot"}}, namespace="default")
        token = dc.add_service_account_token("default", "bot")
        bot = await KubeClient.connect(dc.write_token_kubeconfig(str(tmp_path / "bot"), token))
        try:
            assert (await bot.list(PODS, None))["items"] == []
            assert dc.denials == []
            assert {r.user for r in dc.requests.records} == {
                "kubetrain-admin",
                "system:serviceaccount:default:bot",
            }
        finally:
            await bot.close()
            await admin.close()


async def test_pod_logs_are_authorized_as_their_own_subresource(
    devcluster: DevCluster, admin: KubeClient, tmp_path: Path
) -> None:
    await admin.create(
        PODS,
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        namespace="ops",
    )
    token = devcluster.add_service_account_token("ops", "bot")
    bot = await RawApi.from_kubeconfig(devcluster.write_token_kubeconfig(str(tmp_path / "bot"), token), "bot")
    try:
        role = {
            "metadata": {"name": "pods"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        }
        await admin.create(ROLES, role, namespace="ops")
        await admin.create(ROLE_BINDINGS, binding("RoleBinding", "pods", "Role", "pods"), namespace="ops")
        assert (await bot.request("GET", "/api/v1/namespaces/ops/pods/p"))[0] == 200
        code, body = await bot.request("GET", "/api/v1/namespaces/ops/pods/p/log")
        assert (code, body["message"]) == (
            403,
            f'pods "p" is forbidden: User "{USER}" cannot get resource "pods/log" in API group "" '
            'in the namespace "ops"',
        )
        logs = {
            "metadata": {"name": "logs"},
            "rules": [{"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}],
        }
        await admin.create(ROLES, logs, namespace="ops")
        await admin.create(ROLE_BINDINGS, binding("RoleBinding", "logs", "Role", "logs"), namespace="ops")
        assert (await bot.request("GET", "/api/v1/namespaces/ops/pods/p/log"))[0] == 200  # unbound: empty log
    finally:
        await bot.close()


@pytest.mark.parametrize("devcluster_options", [{"authorization": "RBAC", "denials_limit": 3}])
async def test_the_refusal_log_keeps_only_the_newest_denials(devcluster: DevCluster, bot: KubeClient) -> None:
    """A long-running cluster under a misconfigured client must not grow `denials` without end:
    it keeps the newest `denials_limit` (default 10,000), oldest first, as the request log does."""
    namespaces = ["n0", "n1", "n2", "n3", "n4"]
    for ns in namespaces:
        await refused(bot.list(PODS, ns))
    assert [(d.verb, d.namespace) for d in devcluster.denials] == [("list", ns) for ns in namespaces[-3:]]
    assert devcluster.handlers.auth.denials_total == 5
    assert [r.code for r in devcluster.requests.records if r.user == USER] == [403] * 5


def test_a_denials_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="denials limit must be at least 1, not 0"):
        DevCluster(tls=False, denials_limit=0)
