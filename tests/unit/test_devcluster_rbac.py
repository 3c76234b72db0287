"""devcluster's RBAC authorizer, pure parts: request attributes, rule matching, 403 wording."""

from __future__ import annotations

import pytest

from kubetrain.devcluster.apiserver.auth.rbac import (
    RequestInfo,
    forbidden,
    request_info,
    rule_allows,
    service_account_user,
)


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "", "ns", "pods", "", "")),
        (
            "GET",
            "/api/v1/namespaces/ns/secrets",
            {"watch": "true", "fieldSelector": "metadata.name=tls"},
            ("watch", "", "ns", "secrets", "", "tls"),
        ),
        (
            "GET",
            "/api/v1/namespaces/ns/secrets",
            {"fieldSelector": "type=kubernetes.io/tls,metadata.name==tls"},
            ("list", "", "ns", "secrets", "", "tls"),
        ),
        (
            "GET",
            "/api/v1/namespaces/ns/secrets",
            {"fieldSelector": "metadata.name!=tls"},
            ("list", "", "ns", "secrets", "", ""),
        ),
        ("GET", "/api/v1/pods", {"watch": "1"}, ("watch", "", "", "pods", "", "")),
        ("GET", "/api/v1/pods", {"watch": "false"}, ("list", "", "", "pods", "", "")),
        (
            "DELETE",
            "/apis/kubetrain.io/v1/namespaces/ns/tfjobs",
            {},
            ("deletecollection", "kubetrain.io", "ns", "tfjobs", "", ""),
        ),
        (
            "DELETE",
            "/apis/kubetrain.io/v1/namespaces/ns/tfjobs/j",
            {},
            ("delete", "kubetrain.io", "ns", "tfjobs", "", "j"),
        ),
        (
            "PUT",
            "/apis/kubetrain.io/v1/namespaces/ns/tfjobs/j/status",
            {},
            ("update", "kubetrain.io", "ns", "tfjobs", "status", "j"),
        ),
        ("POST", "/api/v1/namespaces/ns/pods/p/eviction", {}, ("create", "", "ns", "pods", "eviction", "p")),
        (
            "PATCH",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/m",
            {},
            ("patch", "admissionregistration.k8s.io", "", "mutatingwebhookconfigurations", "", "m"),
        ),
        # A namespace is addressed inside itself (a RoleBinding there can grant get on it).
        ("GET", "/api/v1/namespaces/foo", {}, ("get", "", "foo", "namespaces", "", "foo")),
        (
            "PUT",
            "/api/v1/namespaces/foo/finalize",
            {},
            ("update", "", "foo", "namespaces", "finalize", "foo"),
        ),
        ("GET", "/api/v1/namespaces", {}, ("list", "", "", "namespaces", "", "")),
        ("GET", "/api/v1/watch/namespaces/ns/pods", {}, ("watch", "", "ns", "pods", "", "")),
    ],
)
def test_request_attributes_are_derived_like_kube_apiserver(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    info = request_info(method, path, query)
    assert info.resource_request
    assert (info.verb, info.api_group, info.namespace, info.resource, info.subresource, info.name) == expected


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api"),
        ("GET", "/api/v1"),
        ("GET", "/apis"),
        ("GET", "/apis/kubetrain.io"),
        ("GET", "/apis/kubetrain.io/v1"),
        ("GET", "/version"),
        ("POST", "/openapi/v3"),
        ("GET", "/healthz"),
    ],
)
def test_discovery_and_other_paths_are_non_resource_requests(method: str, path: str) -> None:
    info = request_info(method, path, {})
    assert not info.resource_request
    assert (info.verb, info.path) == (method.lower(), path)


def _info(
    verb: str, resource: str, sub: str = "", name: str = "", group: str = "", ns: str = "ns"
) -> RequestInfo:
    return RequestInfo("/x", verb, True, group, "v1", ns, resource, sub, name)


def test_rule_matching_verbs_groups_resources_subresources_and_names() -> None:
    rule = {"apiGroups": ["kubetrain.io"], "resources": ["tfjobs"], "verbs": ["list", "watch"]}
    assert rule_allows(rule, _info("list", "tfjobs", group="kubetrain.io"))
    assert not rule_allows(rule, _info("get", "tfjobs", name="j", group="kubetrain.io"))
    assert not rule_allows(rule, _info("list", "tfjobs", group="other.io"))
    # The main resource does not grant its subresources, nor the reverse.
    assert not rule_allows(rule, _info("list", "tfjobs", sub="status", group="kubetrain.io"))
    status = {"apiGroups": ["kubetrain.io"], "resources": ["tfjobs/status"], "verbs": ["update"]}
    assert rule_allows(status, _info("update", "tfjobs", "status", "j", "kubetrain.io"))
    assert not rule_allows(status, _info("update", "tfjobs", "", "j", "kubetrain.io"))
    # Wildcards.
    every = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}
    assert rule_allows(every, _info("deletecollection", "pods", sub="status"))
    any_status = {"apiGroups": [""], "resources": ["*/status"], "verbs": ["get"]}
    assert rule_allows(any_status, _info("get", "pods", "status", "p"))
    assert not rule_allows(any_status, _info("get", "pods", "", "p"))
    # resourceNames: only requests that carry that name.
    named = {
        "apiGroups": [""],
        "resources": ["secrets"],
        "resourceNames": ["tls"],
        "verbs": ["get", "watch", "create"],
    }
    assert rule_allows(named, _info("get", "secrets", name="tls"))
    assert rule_allows(named, _info("watch", "secrets", name="tls"))
    assert not rule_allows(named, _info("watch", "secrets"))
    assert not rule_allows(named, _info("get", "secrets", name="other"))
    assert not rule_allows(named, _info("create", "secrets"))  # create carries no name


def test_non_resource_url_rules() -> None:
    rule = {"nonResourceURLs": ["/apis/*", "/version"], "verbs": ["get"]}
    assert rule_allows(rule, RequestInfo("/apis/kubetrain.io/v1", "get"))
    assert rule_allows(rule, RequestInfo("/version", "get"))
    assert not rule_allows(rule, RequestInfo("/version/x", "get"))
    assert not rule_allows(rule, RequestInfo("/metrics", "get"))
    assert not rule_allows(rule, RequestInfo("/version", "post"))
    # A resource rule never grants a path, nor the reverse.
    assert not rule_allows(
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, RequestInfo("/version", "get")
    )


def test_forbidden_is_worded_like_kube_apiserver() -> None:
    user = service_account_user("kubetrain-system", "kt-kubetrain")
    assert user.username == "system:serviceaccount:kubetrain-system:kt-kubetrain"
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:kubetrain-system",
        "system:authenticated",
    )
    err = forbidden(user, _info("list", "pods", ns="default"))
    assert err.code == 403 and err.reason == "Forbidden"
    assert err.message == (
        'pods is forbidden: User "system:serviceaccount:kubetrain-system:kt-kubetrain" cannot list '
        'resource "pods" in API group "" in the namespace "default"'
    )
    assert err.details == {"kind": "pods"}
    err = forbidden(user, _info("update", "tfjobs", "status", "j", "kubetrain.io"))
    assert err.message == (
        'tfjobs.kubetrain.io "j" is forbidden: User "system:serviceaccount:kubetrain-system:kt-kubetrain" '
        'cannot update resource "tfjobs/status" in API group "kubetrain.io" in the namespace "ns"'
    )
    assert err.details == {"name": "j", "group": "kubetrain.io", "kind": "tfjobs"}
    err = forbidden(
        user, _info("watch", "namespaces", ns=""), 'RBAC: clusterrole.rbac.authorization.k8s.io "x" not found'
    )
    assert err.message == (
        'namespaces is forbidden: User "system:serviceaccount:kubetrain-system:kt-kubetrain" cannot watch '
        'resource "namespaces" in API group "" at the cluster scope: '
        'RBAC: clusterrole.rbac.authorization.k8s.io "x" not found'
    )
    err = forbidden(user, RequestInfo("/metrics", "get"))
    assert (
        err.message
        == 'forbidden: User "system:serviceaccount:kubetrain-system:kt-kubetrain" cannot get path "/metrics"'
    )
