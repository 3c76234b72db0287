"""User impersonation, as kube-apiserver's WithImpersonation filter does it.

A request with `Impersonate-User` (and any number of `Impersonate-Group` headers) is served as
that user when the authenticated requester may `impersonate` each: `users` (or, for a
`system:serviceaccount:<ns>:<name>` user, `serviceaccounts` `<name>` in `<ns>`) and `groups`, in
the core API group. A refusal is kube-apiserver's 403 (`users "bob" is forbidden: User "…" cannot
impersonate resource "users" in API group "" at the cluster scope`); groups without a user are a
400. The impersonated user's groups are the requested ones plus `system:authenticated`
(ServiceAccounts also get `system:serviceaccounts` and `system:serviceaccounts:<ns>`), as
kube-apiserver adds them. Without authorization (AlwaysAllow) every impersonation is allowed.
"""

from __future__ import annotations

from collections.abc import Callable

from multidict import CIMultiDictProxy

from kubetrain.devcluster.apiserver.auth import rbac
from kubetrain.devcluster.apiserver.base.errors import ApiError

USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"

Denied = Callable[[rbac.UserInfo, rbac.RequestInfo, ApiError], None]


def impersonated(
    headers: CIMultiDictProxy[str],
    requester: rbac.UserInfo,
    authorizer: rbac.Authorizer | None,
    denied: Denied | None = None,
) -> rbac.UserInfo:
    """Who the request acts as: `requester`, or the user it may impersonate."""
    user = headers.get(USER_HEADER, "")
    groups = tuple(headers.getall(GROUP_HEADER, ()))
    if not user:
        if groups or headers.get(UID_HEADER):
            raise ApiError(400, "BadRequest", f"requested {list(groups)} without impersonating a user")
        return requester
    checks: list[rbac.RequestInfo] = []
    if user.startswith(rbac.SERVICE_ACCOUNT_PREFIX):
        namespace, _, name = user[len(rbac.SERVICE_ACCOUNT_PREFIX) :].partition(":")
        checks.append(_info("serviceaccounts", name, namespace))
    else:
        checks.append(_info("users", user))
    checks.extend(_info("groups", group) for group in groups)
    if authorizer is not None:
        for info in checks:
            decision = authorizer.authorize(requester, info)
            if not decision.allowed:
                error = rbac.forbidden(requester, info, decision.reason)
                if denied is not None:
                    denied(requester, info, error)
                raise error
    extra: tuple[str, ...] = ()
    if user.startswith(rbac.SERVICE_ACCOUNT_PREFIX):
        namespace = user[len(rbac.SERVICE_ACCOUNT_PREFIX) :].partition(":")[0]
        extra = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")
    all_groups = tuple(dict.fromkeys((*groups, *extra, "system:authenticated")))
    return rbac.UserInfo(user, all_groups, headers.get(UID_HEADER, ""))


def _info(resource: str, name: str, namespace: str = "") -> rbac.RequestInfo:
    return rbac.RequestInfo(
        path="", verb="impersonate", resource_request=True, resource=resource, name=name, namespace=namespace
    )
