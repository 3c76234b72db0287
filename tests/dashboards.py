"""The dashboard on an RBAC devcluster, for the integration and browser tests: a DevStack with
RBAC and a DashboardServer on it (`rbac_dashboard`), and a service account granted a namespaced
Role (`grant_role`). Import with `from dashboards import grant_role, rbac_dashboard` (tests/ is
on pytest's `pythonpath`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kubetrain.dashboard.server import DashboardServer
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.asuser import anonymous_client
from kubetrain.kube.resources import ResourceRef

RBAC = "rbac.authorization.k8s.io"
ROLES = ResourceRef(RBAC, "v1", "roles", "Role", True)
ROLE_BINDINGS = ResourceRef(RBAC, "v1", "rolebindings", "RoleBinding", True)
SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True)


@contextlib.asynccontextmanager
async def rbac_dashboard() -> AsyncIterator[tuple[DevStack, DashboardServer]]:
    """A started DevStack with RBAC authorization and the dashboard serving kubetrain.io's kinds
    on it (users' requests as themselves, on an anonymous base client); both stopped after."""
    stack = DevStack(DevStackOptions(authorization="RBAC"))
    await stack.start()
    user_base = await anonymous_client(stack.cluster.kubeconfig_path)
    server = DashboardServer(stack.kube, user_base, served_kinds(["kubetrain.io"]), port=0)
    try:
        await server.start()
        yield stack, server
    finally:
        await server.stop()
        await user_base.close()
        await stack.stop()


async def grant_role(
    stack: DevStack, namespace: str, account: str, role: str, rules: list[dict[str, Any]]
) -> str:
    """Service account `account` in `namespace`, bound to a new Role `role` of `rules` there;
    returns the account's token."""
    kube = stack.kube
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": account}}, namespace=namespace)
    await kube.create(ROLES, {"metadata": {"name": role}, "rules": rules}, namespace=namespace)
    binding = {
        "metadata": {"name": f"{account}-{role}"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    await kube.create(ROLE_BINDINGS, binding, namespace=namespace)
    return stack.cluster.add_service_account_token(namespace, account)
