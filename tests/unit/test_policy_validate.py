"""An invalid TrainingPolicy is refused with every problem named by field path."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubetrain.policy import InvalidPolicyError, parse_policy, policy_status, validate_policy


def obj(spec: dict[str, Any], name: str = "p", **top: Any) -> dict[str, Any]:
    out = {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TrainingPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }
    out.update(top)
    return out


def messages(spec: dict[str, Any], **kw: Any) -> list[str]:
    return [str(e) for e in validate_policy(obj(spec, **kw))]


def test_a_complete_policy_is_valid() -> None:
    spec = {
        "namespaceSelector": {
            "matchLabels": {"kubetrain.io/team": "vision"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "staging"]},
                {"key": "sandbox", "operator": "DoesNotExist"},
            ],
        },
        "kinds": ["PyTorchJob", "TFJob"],
        "defaults": {
            "runPolicy": {
                "ttlSecondsAfterFinished": 0,
                "activeDeadlineSeconds": 3600,
                "schedulingPolicy": {"queue": "vision"},
            },
            "labels": {"team": "vision"},
        },
        "limits": {
            "maxReplicasPerJob": 64,
            "maxTotalResources": {"nvidia.com/gpu": 32, "memory": "512Gi", "cpu": "128"},
            "maxActiveDeadlineSeconds": 86400,
            "requireTTL": True,
            "allowedImages": ["registry.example.com/*", "docker.io/pytorch/pytorch:*", "*/team/[a-z]*"],
            "requiredLabels": ["team"],
            "requireGangScheduling": False,
        },
        "enforcement": "Warn",
    }
    assert validate_policy(obj(spec)) == []
    assert parse_policy(obj(spec)).spec.effective_enforcement() == "Warn"
    assert parse_policy(obj({})).spec.effective_enforcement() == "Deny"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {
                "namespaceSelector": {
                    "matchExpressions": [{"key": "team", "operator": "Equals", "values": ["a"]}]
                }
            },
            'spec.namespaceSelector.matchExpressions[0].operator: NotSupported: "Equals" is not supported: '
            'must be one of "In", "NotIn", "Exists", "DoesNotExist"',
        ),
        (
            {"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}},
            "spec.namespaceSelector.matchExpressions[0].values: Required: must be non-empty when operator is",
        ),
        (
            {
                "namespaceSelector": {
                    "matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]
                }
            },
            "spec.namespaceSelector.matchExpressions[0].values: Forbidden: must be empty when operator",
        ),
        (
            {"namespaceSelector": {"matchLabels": {"bad key!": "x"}}},
            "spec.namespaceSelector.matchLabels[bad key!]: Invalid:",
        ),
        (
            {"namespaceSelector": {"matchLabels": {"team": "no spaces"}}},
            'spec.namespaceSelector.matchLabels[team]: Invalid: value "no spaces"',
        ),
        (
            {"kinds": ["PyTorchJob", "SparkJob"]},
            'spec.kinds[1]: NotSupported: "SparkJob" is not supported',
        ),
        ({"kinds": ["TFJob", "TFJob"]}, "spec.kinds[1]: Duplicate:"),
        (
            {"limits": {"maxReplicasPerJob": -1}},
            "spec.limits.maxReplicasPerJob: Invalid: -1: must be greater than or equal to 0",
        ),
        ({"limits": {"maxActiveDeadlineSeconds": 0}}, "spec.limits.maxActiveDeadlineSeconds: Invalid: 0"),
        (
            {"limits": {"maxTotalResources": {"nvidia.com/gpu": -4}}},
            "spec.limits.maxTotalResources[nvidia.com/gpu]: Invalid: -4",
        ),
        (
            {"limits": {"maxTotalResources": {"memory": "64GB"}}},
            'spec.limits.maxTotalResources[memory]: Invalid: "64GB" is not a quantity',
        ),
        (
            {"limits": {"allowedImages": ["registry.example.com/[ab"]}},
            "spec.limits.allowedImages[0]: Invalid: \"registry.example.com/[ab\": has an unclosed '['",
        ),
        (
            {"limits": {"allowedImages": [""]}},
            'spec.limits.allowedImages[0]: Invalid: "": must be a non-empty glob',
        ),
        (
            {"limits": {"allowedImages": ["pytorch/*"]}},
            'spec.limits.allowedImages[0]: Invalid: "pytorch/*": never matches',
        ),
        ({"limits": {"requiredLabels": ["team", "team"]}}, "spec.limits.requiredLabels[1]: Duplicate:"),
        (
            {"defaults": {"runPolicy": {"backoffLimit": -2}}},
            "spec.defaults.runPolicy.backoffLimit: Invalid: -2",
        ),
        (
            {"defaults": {"runPolicy": {"ttlSecondsAfterFinished": -1}}},
            "spec.defaults.runPolicy.ttlSecondsAfterFinished: Invalid: -1",
        ),
        (
            {
                "defaults": {"runPolicy": {"activeDeadlineSeconds": 90000}},
                "limits": {"maxActiveDeadlineSeconds": 86400},
            },
            "spec.defaults.runPolicy.activeDeadlineSeconds: Invalid: 90000: exceeds this policy's",
        ),
        (
            {"enforcement": "Audit"},
            'spec.enforcement: NotSupported: "Audit" is not supported: must be one of "Deny", "Warn"',
        ),
        ({"limits": {"maxGpus": 4}}, "spec.limits.maxGpus: Invalid: unknown field"),
        (
            {"defaults": {"runPolicy": {"cleanPodPolicy": "Some"}}},
            "spec.defaults.runPolicy.cleanPodPolicy: NotSupported",
        ),
    ],
)
def test_invalid_policies_name_the_field(spec: dict[str, Any], expected: str) -> None:
    found = messages(spec)
    assert any(m.startswith(expected) for m in found), found


def test_all_problems_are_reported_at_once() -> None:
    spec = {"kinds": ["Nope"], "limits": {"maxReplicasPerJob": -1, "allowedImages": ["[x"]}}
    with pytest.raises(InvalidPolicyError) as info:
        parse_policy(obj(spec))
    assert [e.path for e in info.value.errors] == [
        "spec.kinds[0]",
        "spec.limits.maxReplicasPerJob",
        "spec.limits.allowedImages[0]",
    ]


def test_identity_fields() -> None:
    assert any(m.startswith("kind: NotSupported") for m in messages({}, kind="TFJob"))
    assert any(m.startswith("apiVersion: NotSupported") for m in messages({}, apiVersion="kubeflow.org/v1"))
    assert any(m.startswith('metadata.name: Invalid: "Bad_Name"') for m in messages({}, name="Bad_Name"))


def test_status_reports_validity_and_observed_generation() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    good = obj({})
    good["metadata"]["generation"] = 3
    status = policy_status(good, validate_policy(good), now)
    assert status["valid"] is True and status["observedGeneration"] == 3
    assert status["conditions"][0]["status"] == "True"
    assert status["conditions"][0]["lastTransitionTime"] == "2026-01-02T03:04:05Z"
    bad = obj({"limits": {"maxReplicasPerJob": -1}})
    bad["metadata"]["generation"] = 4
    bad["status"] = status
    later = datetime(2026, 1, 3, tzinfo=UTC)
    status2 = policy_status(bad, validate_policy(bad), later)
    assert status2["valid"] is False and status2["observedGeneration"] == 4
    assert "spec.limits.maxReplicasPerJob" in status2["message"]
    assert status2["conditions"][0]["reason"] == "InvalidSpec"
    assert status2["conditions"][0]["lastTransitionTime"] == "2026-01-03T00:00:00Z"
    # Unchanged validity keeps the transition time.
    bad["status"] = status2
    assert policy_status(bad, validate_policy(bad), now)["conditions"][0]["lastTransitionTime"] == (
        "2026-01-03T00:00:00Z"
    )
