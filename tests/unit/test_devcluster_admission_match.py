"""Which webhooks kube-apiserver calls for a request: rules, selectors, scope."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.admission.match import (
    MatchError,
    is_exempt_resource,
    rule_matches,
    selector_matches,
    webhook_applies,
)

POD = {"metadata": {"name": "p", "namespace": "team", "labels": {"app": "train"}}}


def _rule(**overrides: Any) -> dict[str, Any]:
    rule = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
    rule.update(overrides)
    return rule


# A pod CREATE in namespace "team": the request the rules and webhooks below are matched against.
POD_CREATE: dict[str, Any] = {
    "operation": "CREATE",
    "group": "",
    "version": "v1",
    "resource": "pods",
    "subresource": "",
    "namespace": "team",
}


def _match(rule: dict[str, Any], **request: Any) -> bool:
    return rule_matches(rule, **{**POD_CREATE, **request})


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {}, True),
        ({}, {"a": "b"}, True),
        ({"matchLabels": {"app": "train"}}, {"app": "train", "x": "y"}, True),
        ({"matchLabels": {"app": "train"}}, {"app": "serve"}, False),
        (
            {"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "ci"]}]},
            {"env": "ci"},
            True,
        ),
        ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}]}, {}, False),
        ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}, {}, True),
        (
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
            {"env": "prod"},
            False,
        ),
        ({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}, {"skip": ""}, False),
        ({"matchExpressions": [{"key": "skip", "operator": "Exists"}]}, {"skip": ""}, True),
    ],
)
def test_label_selector(selector: dict[str, Any] | None, labels: dict[str, str], expected: bool) -> None:
    assert selector_matches(selector, labels) is expected


def test_operations_groups_versions_and_wildcards() -> None:
    assert _match(_rule())
    assert not _match(_rule(), operation="UPDATE")
    assert _match(_rule(operations=["*"]), operation="DELETE")
    assert not _match(_rule(), group="apps")
    assert _match(_rule(apiGroups=["*"], apiVersions=["*"]), group="kubeflow.org", version="v1")
    assert not _match(_rule(apiVersions=["v1beta1"]))


def test_resource_patterns_and_subresources() -> None:
    assert not _match(_rule(resources=["pods"]), subresource="status")
    assert _match(_rule(resources=["pods/status"]), subresource="status")
    assert not _match(_rule(resources=["pods/status"]))
    assert _match(_rule(resources=["pods/*"]), subresource="binding")
    assert not _match(_rule(resources=["*"]), subresource="status")
    assert _match(_rule(resources=["*"]), resource="services")
    assert _match(_rule(resources=["*/*"]), subresource="status")
    assert _match(_rule(resources=["*/status"]), resource="tfjobs", subresource="status")
    assert not _match(_rule(resources=["*/status"]), resource="tfjobs")


def test_scope() -> None:
    assert _match(_rule(scope="Namespaced"))
    assert not _match(_rule(scope="Cluster"))
    assert _match(_rule(scope="Cluster", resources=["nodes"]), resource="nodes", namespace="")
    # A Namespace object is cluster-scoped even though its request carries a namespace.
    assert _match(_rule(scope="Cluster", resources=["namespaces"]), resource="namespaces", namespace="team")
    assert not _match(
        _rule(scope="Namespaced", resources=["namespaces"]), resource="namespaces", namespace="team"
    )


def _applies(webhook: dict[str, Any], **request: Any) -> bool:
    base: dict[str, Any] = {**POD_CREATE, "obj": POD, "old_obj": None, "namespace_labels": {"tier": "gpu"}}
    return webhook_applies(webhook, **{**base, **request})


def test_namespace_selector_uses_namespace_labels() -> None:
    hook = {"rules": [_rule()], "namespaceSelector": {"matchLabels": {"tier": "gpu"}}}
    assert _applies(hook)
    assert not _applies(hook, namespace_labels={"tier": "cpu"})


def test_namespace_selector_for_a_namespace_object_uses_its_own_labels() -> None:
    hook = {
        "rules": [_rule(operations=["CREATE", "DELETE"], resources=["namespaces"])],
        "namespaceSelector": {"matchLabels": {"watched": "yes"}},
    }
    ns = {"metadata": {"name": "new", "labels": {"watched": "yes"}}}
    assert _applies(hook, resource="namespaces", namespace="", obj=ns, namespace_labels=None)
    unlabeled = {"metadata": {"name": "new"}}
    assert not _applies(hook, resource="namespaces", namespace="", obj=unlabeled, namespace_labels=None)
    # On DELETE the stored namespace's labels count, not the (absent) new object.
    assert _applies(
        hook, operation="DELETE", resource="namespaces", obj=None, old_obj=ns, namespace_labels=None
    )


def test_namespace_selector_never_exempts_other_cluster_scoped_resources() -> None:
    hook = {
        "rules": [_rule(resources=["nodes"])],
        "namespaceSelector": {"matchLabels": {"tier": "gpu"}},
    }
    assert _applies(hook, resource="nodes", namespace="", namespace_labels=None)


def test_namespace_selector_on_missing_namespace_is_not_found_only_when_rules_match() -> None:
    hook = {"rules": [_rule()], "namespaceSelector": {"matchLabels": {"tier": "gpu"}}}
    with pytest.raises(MatchError) as err:
        _applies(hook, namespace_labels=None)
    assert err.value.status["code"] == 404
    assert err.value.status["message"] == 'namespaces "team" not found'
    assert not _applies(hook, namespace_labels=None, resource="services")


def test_object_selector_matches_new_or_old_object() -> None:
    hook = {"rules": [_rule(operations=["*"])], "objectSelector": {"matchLabels": {"app": "train"}}}
    assert _applies(hook)
    other = {"metadata": {"name": "p", "labels": {"app": "other"}}}
    assert not _applies(hook, obj=other)
    assert _applies(hook, operation="UPDATE", obj=other, old_obj=POD)
    assert _applies(hook, operation="DELETE", obj=None, old_obj=POD)


def test_invalid_selector_is_an_internal_error() -> None:
    hook = {
        "rules": [_rule()],
        "objectSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
    }
    with pytest.raises(MatchError) as err:
        _applies(hook)
    assert err.value.status["code"] == 500


def test_webhook_configurations_are_exempt() -> None:
    assert is_exempt_resource("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    assert is_exempt_resource("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
    assert not is_exempt_resource("", "pods")
