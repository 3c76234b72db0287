"""runPolicy.podFailurePolicy through default_job/validate_job (the webhooks' functions): batch/v1's
rules for podFailurePolicy, kubetrain's RestartJob action and replicaTypes, every error at once."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.api.errors import ErrorKind
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job

BASE = "spec.runPolicy.podFailurePolicy.rules"


def tfjob(rules: Any) -> dict[str, Any]:
    def rspec(n: int) -> dict[str, Any]:
        containers = [{"name": "tensorflow", "image": "x"}, {"name": "side", "image": "y"}]
        return {"replicas": n, "template": {"spec": {"containers": containers}}}

    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TFJob",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {
            "tfReplicaSpecs": {"Chief": rspec(1), "Worker": rspec(2)},
            "runPolicy": {"podFailurePolicy": {"rules": rules}},
        },
    }


def errors(rules: Any) -> list[tuple[str, ErrorKind]]:
    result = validate_job(default_job(tfjob(rules)).obj)
    return [(e.path, e.kind) for e in result.errors]


def test_valid_rules_of_every_action() -> None:
    rules = [
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": "tensorflow", "operator": "In", "values": [1, 2]},
        },
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [0]}},
        {
            "action": "RestartJob",
            "replicaTypes": ["Worker"],
            "onExitCodes": {"operator": "In", "values": [42]},
        },
    ]
    assert errors(rules) == []


def test_pod_condition_status_defaults_to_true() -> None:
    out = default_job(tfjob([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}])).obj
    assert out["spec"]["runPolicy"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}
    ]


@pytest.mark.parametrize(
    ("rule", "path", "kind"),
    [
        ({"onPodConditions": [{"type": "A"}]}, f"{BASE}[0].action", ErrorKind.REQUIRED),
        (
            {"action": "FailIndex", "onPodConditions": [{"type": "A"}]},
            f"{BASE}[0].action",
            ErrorKind.NOT_SUPPORTED,
        ),
        ({"action": "Ignore"}, f"{BASE}[0]", ErrorKind.REQUIRED),
        (
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "A"}],
                "onExitCodes": {"operator": "In", "values": [1]},
            },
            f"{BASE}[0]",
            ErrorKind.INVALID,
        ),
        (
            {"action": "Ignore", "onExitCodes": {"values": [1]}},
            f"{BASE}[0].onExitCodes.operator",
            ErrorKind.REQUIRED,
        ),
        (
            {"action": "Ignore", "onExitCodes": {"operator": "In"}},
            f"{BASE}[0].onExitCodes.values",
            ErrorKind.REQUIRED,
        ),
        (
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": []}},
            f"{BASE}[0].onExitCodes.values",
            ErrorKind.REQUIRED,
        ),
        (
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [0, 1]}},
            f"{BASE}[0].onExitCodes.values[0]",
            ErrorKind.INVALID,
        ),
        (
            {"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [3, 2]}},
            f"{BASE}[0].onExitCodes.values[1]",
            ErrorKind.INVALID,
        ),
        (
            {"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [2, 2]}},
            f"{BASE}[0].onExitCodes.values[1]",
            ErrorKind.DUPLICATE,
        ),
        (
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": list(range(1, 257))}},
            f"{BASE}[0].onExitCodes.values",
            ErrorKind.INVALID,
        ),
        (
            {"action": "Ignore", "onExitCodes": {"containerName": "nope", "operator": "In", "values": [1]}},
            f"{BASE}[0].onExitCodes.containerName",
            ErrorKind.INVALID,
        ),
        ({"action": "Ignore", "onPodConditions": []}, f"{BASE}[0].onPodConditions", ErrorKind.REQUIRED),
        (
            {"action": "Ignore", "onPodConditions": [{"status": "True"}]},
            f"{BASE}[0].onPodConditions[0].type",
            ErrorKind.REQUIRED,
        ),
        (
            {"action": "Ignore", "onPodConditions": [{"type": "a b"}]},
            f"{BASE}[0].onPodConditions[0].type",
            ErrorKind.INVALID,
        ),
        (
            {"action": "Ignore", "onPodConditions": [{"type": "A", "status": "Yes"}]},
            f"{BASE}[0].onPodConditions[0].status",
            ErrorKind.NOT_SUPPORTED,
        ),
        (
            {"action": "Ignore", "replicaTypes": ["PS"], "onPodConditions": [{"type": "A"}]},
            f"{BASE}[0].replicaTypes[0]",
            ErrorKind.NOT_SUPPORTED,
        ),
        (
            {"action": "Ignore", "replicaTypes": ["Worker", "Worker"], "onPodConditions": [{"type": "A"}]},
            f"{BASE}[0].replicaTypes[1]",
            ErrorKind.DUPLICATE,
        ),
    ],
)
def test_invalid_rule(rule: dict[str, Any], path: str, kind: ErrorKind) -> None:
    assert (path, kind) in errors([rule])


def test_too_many_rules() -> None:
    rule = {"action": "Ignore", "onPodConditions": [{"type": "A"}]}
    assert (BASE, ErrorKind.INVALID) in errors([rule] * 21)


def test_every_problem_at_once() -> None:
    found = errors(
        [
            {"action": "Ignore"},
            {"action": "Nope", "onExitCodes": {"operator": "In", "values": [0]}},
            {"action": "Count", "onPodConditions": [{"type": ""}]},
        ]
    )
    assert {p for p, _ in found} >= {
        f"{BASE}[0]",
        f"{BASE}[1].action",
        f"{BASE}[1].onExitCodes.values[0]",
        f"{BASE}[2].onPodConditions[0].type",
    }
