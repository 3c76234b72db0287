"""Which policies apply: namespace label selectors (metav1.LabelSelector) and kinds; the index."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.api.policy import NamespaceSelector, TrainingPolicy
from kubetrain.policy import PolicyIndex, matching_policies, parse_policy, selector_matches


def policy_obj(
    name: str, selector: dict[str, Any] | None = None, kinds: list[str] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if selector is not None:
        body["namespaceSelector"] = selector
    if kinds is not None:
        body["kinds"] = kinds
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TrainingPolicy",
        "metadata": {"name": name},
        "spec": body,
    }


def policy(
    name: str, selector: dict[str, Any] | None = None, kinds: list[str] | None = None
) -> TrainingPolicy:
    return parse_policy(policy_obj(name, selector, kinds))


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


LABELS = {"team": "vision", "env": "prod"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        (None, True),
        ({}, True),
        ({"matchLabels": {"team": "vision"}}, True),
        ({"matchLabels": {"team": "vision", "env": "dev"}}, False),
        ({"matchLabels": {"missing": ""}}, False),
        ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["nlp", "vision"]}]}, True),
        ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["nlp"]}]}, False),
        ({"matchExpressions": [{"key": "absent", "operator": "In", "values": ["x"]}]}, False),
        ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["nlp"]}]}, True),
        ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["vision"]}]}, False),
        # NotIn holds when the key is absent (Kubernetes semantics).
        ({"matchExpressions": [{"key": "absent", "operator": "NotIn", "values": ["x"]}]}, True),
        ({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "absent", "operator": "Exists"}]}, False),
        ({"matchExpressions": [{"key": "absent", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, False),
        # matchLabels and every expression are ANDed.
        (
            {
                "matchLabels": {"team": "vision"},
                "matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod"]},
                    {"key": "sandbox", "operator": "DoesNotExist"},
                ],
            },
            True,
        ),
        (
            {
                "matchLabels": {"team": "vision"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}],
            },
            False,
        ),
    ],
)
def test_label_selector_semantics(selector: dict[str, Any] | None, matches: bool) -> None:
    parsed = None if selector is None else NamespaceSelector.model_validate(selector)
    assert selector_matches(parsed, LABELS) is matches


def test_kinds_restrict_a_policy_and_absent_kinds_mean_all() -> None:
    only_pt = policy("pt-only", kinds=["PyTorchJob"])
    every = policy("every")
    assert [p.name for p in matching_policies([only_pt, every], "PyTorchJob", {})] == ["every", "pt-only"]
    assert [p.name for p in matching_policies([only_pt, every], "TFJob", {})] == ["every"]


def test_matching_policies_are_in_name_order() -> None:
    policies = [policy(n) for n in ("c", "a", "b")]
    assert [p.name for p in matching_policies(policies, "MXJob", {})] == ["a", "b", "c"]


def test_index_follows_namespace_relabelling_without_restart() -> None:
    index = PolicyIndex()
    index.on_policy_add(policy_obj("vision-defaults", {"matchLabels": {"team": "vision"}}))
    index.on_policy_add(policy_obj("nlp-defaults", {"matchLabels": {"team": "nlp"}}))
    index.on_namespace_add(namespace("research", team="vision"))
    assert [p.name for p in index.for_job("PyTorchJob", "research")] == ["vision-defaults"]
    old = namespace("research", team="vision")
    index.on_namespace_update(old, namespace("research", team="nlp"))
    assert [p.name for p in index.for_job("PyTorchJob", "research")] == ["nlp-defaults"]
    index.on_namespace_delete(namespace("research"))
    assert index.for_job("PyTorchJob", "research") == []


def test_index_follows_policy_add_update_delete() -> None:
    index = PolicyIndex()
    index.on_namespace_add(namespace("a", team="vision"))
    assert index.for_job("TFJob", "a") == []
    index.on_policy_add(policy_obj("p", {"matchLabels": {"team": "vision"}}, kinds=["TFJob"]))
    assert [p.name for p in index.for_job("TFJob", "a")] == ["p"]
    index.on_policy_update(None, policy_obj("p", {"matchLabels": {"team": "vision"}}, kinds=["MXJob"]))
    assert index.for_job("TFJob", "a") == []
    assert [p.name for p in index.for_job("MXJob", "a")] == ["p"]
    index.on_policy_delete(policy_obj("p"))
    assert index.for_job("MXJob", "a") == []


def test_index_knows_the_metadata_name_label_of_every_namespace() -> None:
    index = PolicyIndex()
    by_name = {"matchLabels": {"kubernetes.io/metadata.name": "ml"}}
    index.on_policy_add(policy_obj("ml-only", by_name))
    # Unknown yet (watch event still on its way) and known namespaces alike.
    assert [p.name for p in index.for_job("TFJob", "ml")] == ["ml-only"]
    index.on_namespace_add(namespace("ml", team="x"))
    assert [p.name for p in index.for_job("TFJob", "ml")] == ["ml-only"]
    assert index.for_job("TFJob", "other") == []
    assert index.namespace_labels("ml") == {"team": "x", "kubernetes.io/metadata.name": "ml"}


def test_index_keeps_invalid_policies_aside_and_never_applies_them() -> None:
    index = PolicyIndex()
    bad = policy_obj("bad", {"matchExpressions": [{"key": "team", "operator": "Equals", "values": ["x"]}]})
    index.on_policy_add(bad)
    assert index.for_job("TFJob", "a") == []
    assert list(index.invalid_policies()) == ["bad"]
    # Fixing it makes it valid and applicable.
    index.on_policy_update(bad, policy_obj("bad", {}))
    assert index.invalid_policies() == {}
    assert [p.name for p in index.for_job("TFJob", "a")] == ["bad"]
    index.clear()
    assert index.policies() == []
