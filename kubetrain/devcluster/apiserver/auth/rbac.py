"""Authorization with Kubernetes RBAC semantics (`DevCluster(authorization="RBAC")`).

What kube-apiserver does with `--authorization-mode=RBAC`, for the request shapes clients send:

- `request_info(method, path, query)` derives the request attributes exactly like the API
  server's RequestInfoFactory (k8s.io/apiserver/pkg/endpoints/request): resource requests are
  `/api/v1/...` and `/apis/<group>/<version>/...` with a resource; `/api`, `/api/v1`, `/apis`,
  `/apis/<group>[/<version>]`, `/version`, `/healthz`, `/openapi/...` are non-resource requests
  whose verb is the lower-cased HTTP method. GET without a name is `list`, or `watch` with
  `?watch=true`; for both, an exact `metadata.name` field selector becomes the request's name
  (so a rule with `resourceNames` can allow a list/watch of one object, as the RBAC
  documentation says). DELETE without a name is `deletecollection`. `/api/v1/namespaces/<ns>`
  has namespace `<ns>` (a RoleBinding in a namespace can grant `get` on that namespace).
- `Authorizer.authorize(user, info)`: members of `system:masters` are always allowed (kube's
  privileged-group authorizer); otherwise every ClusterRoleBinding, then (for a namespaced
  request) every RoleBinding of the request's namespace, whose subjects match the user
  (User by name, Group by membership, ServiceAccount as `system:serviceaccount:<ns>:<name>`)
  contributes the rules of its roleRef. A rule allows the request when verb, API group,
  resource (`resource/subresource`, `*`, `*/subresource`) and resourceNames match (resource
  requests), or verb and nonResourceURLs (`*` suffix wildcard; only through ClusterRoleBindings).
  A binding whose role does not exist contributes an error to the denial's reason, worded like
  kube's (`RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`).
- `forbidden(user, info, reason)`: the 403 body kube-apiserver sends, e.g.
  `pods "p" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "pods" in API
  group "" in the namespace "ns"`, or `... at the cluster scope`, or `forbidden: User "u" cannot
  get path "/metrics"` for non-resource requests.
- `BOOTSTRAP_POLICY`: the default ClusterRoles/Bindings a cluster starts with that matter to
  clients: cluster-admin (system:masters), system:discovery, system:public-info-viewer and
  system:basic-user (ClusterRole aggregation is not emulated).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote
from kubetrain.devcluster.apiserver.storage.store import Store

RBAC_GROUP = "rbac.authorization.k8s.io"
ROLES_KEY = f"roles.{RBAC_GROUP}"
CLUSTER_ROLES_KEY = f"clusterroles.{RBAC_GROUP}"
ROLE_BINDINGS_KEY = f"rolebindings.{RBAC_GROUP}"
CLUSTER_ROLE_BINDINGS_KEY = f"clusterrolebindings.{RBAC_GROUP}"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
MASTERS = "system:masters"

_NAMESPACE_SUBRESOURCES = {"status", "finalize"}
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(frozen=True)
class UserInfo:
    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"username": self.username, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        return out


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """The identity a ServiceAccount token authenticates as."""
    return UserInfo(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        uid,
    )


ANONYMOUS = UserInfo("system:anonymous", ("system:unauthenticated",))


@dataclass(frozen=True)
class RequestInfo:
    path: str
    verb: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


def _truthy(value: str) -> bool:
    return value.lower() in ("1", "t", "true")


def _exact_name(field_selector: str) -> str | None:
    """`RequiresExactMatch("metadata.name")` of a field selector (`=` or `==`, among ANDed terms)."""
    for term in field_selector.split(","):
        term = term.strip()
        if "!=" in term:
            continue
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and key.strip() == "metadata.name":
            return value.strip()
    return None


def _valid_path_segment(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "%" not in name


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """The authorization attributes kube-apiserver derives from a request (RequestInfoFactory)."""
    non_resource = RequestInfo(path=path, verb=method.lower())
    parts = [p for p in path.split("/") if p]
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    prefix, rest = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(rest) < 3:
            return non_resource
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    verb = _METHOD_VERBS.get(method.upper(), "")
    if rest and rest[0] == "watch":  # the deprecated /watch/ path prefix
        verb, rest = "watch", rest[1:]
        if not rest:
            return RequestInfo(path, verb, True, group, version)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if not name and verb == "get":
        verb = "watch" if _truthy(query.get("watch", "")) else "list"
        selected = _exact_name(query.get("fieldSelector", ""))
        if selected is not None and _valid_path_segment(selected):
            name = selected
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(path, verb, True, group, version, namespace, resource, subresource, name)


# ---- rules ----------------------------------------------------------------------------------
def _verb_matches(rule: Obj, verb: str) -> bool:
    verbs = rule.get("verbs") or []
    return "*" in verbs or verb in verbs


def _group_matches(rule: Obj, group: str) -> bool:
    groups = rule.get("apiGroups") or []
    return "*" in groups or group in groups


def _resource_matches(rule: Obj, combined: str, subresource: str) -> bool:
    for resource in rule.get("resources") or []:
        if resource == "*" or resource == combined:
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def _name_matches(rule: Obj, name: str) -> bool:
    names = rule.get("resourceNames") or []
    return not names or name in names


def _url_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or []:
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(rule: Obj, info: RequestInfo) -> bool:
    if info.resource_request:
        combined = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
        return (
            _verb_matches(rule, info.verb)
            and _group_matches(rule, info.api_group)
            and _resource_matches(rule, combined, info.subresource)
            and _name_matches(rule, info.name)
        )
    return _verb_matches(rule, info.verb) and _url_matches(rule, info.path)


def _applies_to(subject: Obj, user: UserInfo, binding_namespace: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return bool(user.username == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.username == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


@dataclass
class Decision:
    allowed: bool
    reason: str = ""
    errors: list[str] = field(default_factory=list)


class Authorizer:
    """RBAC over the Roles/ClusterRoles/RoleBindings/ClusterRoleBindings in the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _role_rules(self, ref: Obj, binding_namespace: str) -> tuple[list[Obj], str | None]:
        kind, name = ref.get("kind"), ref.get("name", "")
        if kind == "ClusterRole":
            role = self.store.get(CLUSTER_ROLES_KEY, "", name)
            missing = f'clusterrole.{RBAC_GROUP} "{name}" not found'
        elif kind == "Role" and binding_namespace:
            role = self.store.get(ROLES_KEY, binding_namespace, name)
            missing = f'role.{RBAC_GROUP} "{name}" not found'
        else:
            return [], f"unsupported role reference kind: {go_quote(kind if isinstance(kind, str) else '')}"
        if role is None:
            return [], missing
        return [r for r in role.get("rules") or [] if isinstance(r, dict)], None

    def _bindings(self, namespace: str) -> Iterable[tuple[Obj, str]]:
        for binding in self.store.items(CLUSTER_ROLE_BINDINGS_KEY):
            yield binding, ""
        if namespace:
            for binding in self.store.items(ROLE_BINDINGS_KEY, namespace):
                yield binding, namespace

    def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        if MASTERS in user.groups:
            return Decision(True, "privileged group")
        errors: list[str] = []
        for binding, binding_namespace in self._bindings(info.namespace):
            subjects = [s for s in binding.get("subjects") or [] if isinstance(s, dict)]
            if not any(_applies_to(s, user, binding_namespace) for s in subjects):
                continue
            rules, error = self._role_rules(binding.get("roleRef") or {}, binding_namespace)
            if error is not None:
                errors.append(error)
                continue
            for rule in rules:
                if rule_allows(rule, info):
                    kind = "RoleBinding" if binding_namespace else "ClusterRoleBinding"
                    where = f"/{binding_namespace}" if binding_namespace else ""
                    return Decision(True, f'RBAC: allowed by {kind} "{binding["metadata"]["name"]}{where}"')
        return Decision(False, _aggregate(errors), errors)


def _aggregate(errors: list[str]) -> str:
    """`RBAC: <errors>` as utilerrors.NewAggregate prints them (deduplicated, `[a, b]` for several)."""
    unique = list(dict.fromkeys(errors))
    if not unique:
        return ""
    text = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return f"RBAC: {text}"


def forbidden(user: UserInfo, info: RequestInfo, reason: str = "") -> ApiError:
    """kube-apiserver's 403 for a denied request (responsewriters.Forbidden + NewForbidden)."""
    if not info.resource_request:
        message = f'User "{user.username}" cannot {info.verb} path "{info.path}"'
    else:
        resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
        message = (
            f'User "{user.username}" cannot {info.verb} resource "{resource}" in API group "{info.api_group}"'
        )
        if info.namespace:
            message += f' in the namespace "{info.namespace}"'
        else:
            message += " at the cluster scope"
    if reason:
        message = f"{message}: {reason}"
    details: dict[str, Any] = {}
    if not info.resource_request:
        return ApiError(403, "Forbidden", f"forbidden: {message}", details)
    qualified = f"{info.resource}.{info.api_group}" if info.api_group else info.resource
    if info.name:
        details["name"] = info.name
    if info.api_group:
        details["group"] = info.api_group
    details["kind"] = info.resource
    target = f'{qualified} "{info.name}"' if info.name else qualified
    return ApiError(403, "Forbidden", f"{target} is forbidden: {message}", details)


# ---- the default policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) --------------------
def _cluster_role(name: str, rules: list[Obj]) -> Obj:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "rules": rules,
    }


def _cluster_role_binding(name: str, groups: list[str]) -> Obj:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
    }


_PUBLIC_INFO = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
BOOTSTRAP_CLUSTER_ROLES: list[Obj] = [
    _cluster_role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _cluster_role(
        "system:discovery",
        [
            {
                "nonResourceURLs": sorted(
                    ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *_PUBLIC_INFO]
                ),
                "verbs": ["get"],
            }
        ],
    ),
    _cluster_role("system:public-info-viewer", [{"nonResourceURLs": _PUBLIC_INFO, "verbs": ["get"]}]),
    _cluster_role(
        "system:basic-user",
        [
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["selfsubjectreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
        ],
    ),
]
BOOTSTRAP_CLUSTER_ROLE_BINDINGS: list[Obj] = [
    _cluster_role_binding("cluster-admin", [MASTERS]),
    _cluster_role_binding("system:discovery", ["system:authenticated"]),
    _cluster_role_binding("system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]),
    _cluster_role_binding("system:basic-user", ["system:authenticated"]),
]


@dataclass(frozen=True)
class Denial:
    """One request the authorizer refused (`DevCluster.denials`)."""

    user: str
    verb: str
    resource: str  # "resource" or "resource/subresource"; "" for a non-resource request
    api_group: str
    namespace: str
    name: str
    path: str
    message: str


def denial(user: UserInfo, info: RequestInfo, error: ApiError) -> Denial:
    resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    return Denial(
        user.username,
        info.verb,
        resource,
        info.api_group,
        info.namespace,
        info.name,
        info.path,
        error.message,
    )
