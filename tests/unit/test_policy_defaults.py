"""Platform defaults: only fields the user left unset, policies in name order, first wins."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.api.policy import TrainingPolicy
from kubetrain.policy import apply_policy_defaults, parse_policy


def policy(name: str, defaults: dict[str, Any]) -> TrainingPolicy:
    return parse_policy(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "TrainingPolicy",
            "metadata": {"name": name},
            "spec": {"defaults": defaults},
        }
    )


def job(run_policy: dict[str, Any] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {}}}}
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    metadata: dict[str, Any] = {"name": "j", "namespace": "ns"}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "kubetrain.io/v1", "kind": "TFJob", "metadata": metadata, "spec": spec}


TEAM = {
    "runPolicy": {
        "ttlSecondsAfterFinished": 86400,
        "activeDeadlineSeconds": 7200,
        "backoffLimit": 3,
        "cleanPodPolicy": "All",
        "schedulingPolicy": {"queue": "vision", "priorityClass": "team-normal"},
    },
    "labels": {"team": "vision", "cost-center": "cc-42"},
}


def test_defaults_fill_unset_fields() -> None:
    result = apply_policy_defaults(job(), [policy("team", TEAM)])
    rp = result.obj["spec"]["runPolicy"]
    assert rp["ttlSecondsAfterFinished"] == 86400
    assert rp["activeDeadlineSeconds"] == 7200
    assert rp["backoffLimit"] == 3
    assert rp["cleanPodPolicy"] == "All"
    assert rp["schedulingPolicy"] == {"queue": "vision", "priorityClass": "team-normal"}
    assert result.obj["metadata"]["labels"] == {"team": "vision", "cost-center": "cc-42"}
    assert 'policy "team": spec.runPolicy.schedulingPolicy.queue = "vision"' in result.applied
    assert 'policy "team": metadata.labels[team] = "vision"' in result.applied
    assert 'policy "team": spec.runPolicy.ttlSecondsAfterFinished = 86400' in result.applied


def test_user_values_win() -> None:
    mine = job(
        {"ttlSecondsAfterFinished": 60, "schedulingPolicy": {"queue": "mine", "minAvailable": 2}},
        labels={"team": "nlp"},
    )
    result = apply_policy_defaults(mine, [policy("team", TEAM)])
    rp = result.obj["spec"]["runPolicy"]
    assert rp["ttlSecondsAfterFinished"] == 60
    assert rp["schedulingPolicy"] == {"queue": "mine", "minAvailable": 2, "priorityClass": "team-normal"}
    assert result.obj["metadata"]["labels"] == {"team": "nlp", "cost-center": "cc-42"}


def test_first_policy_in_name_order_wins() -> None:
    policies = [
        policy("b-org", {"runPolicy": {"schedulingPolicy": {"queue": "org"}, "backoffLimit": 6}}),
        policy("a-team", {"runPolicy": {"schedulingPolicy": {"queue": "team"}}}),
    ]
    result = apply_policy_defaults(job(), policies)
    rp = result.obj["spec"]["runPolicy"]
    assert rp["schedulingPolicy"]["queue"] == "team"
    assert rp["backoffLimit"] == 6  # only b-org defaults it


def test_policy_defaults_replace_built_in_defaults_the_user_did_not_write() -> None:
    submitted = job()
    built_in = job({"cleanPodPolicy": "Running", "suspend": False})  # what §2 defaulting produced
    result = apply_policy_defaults(
        built_in, [policy("team", {"runPolicy": {"cleanPodPolicy": "All"}})], user_job=submitted
    )
    assert result.obj["spec"]["runPolicy"] == {"cleanPodPolicy": "All", "suspend": False}
    # ... but not a value the user wrote, even if it equals the built-in default.
    written = job({"cleanPodPolicy": "Running"})
    result = apply_policy_defaults(
        built_in, [policy("team", {"runPolicy": {"cleanPodPolicy": "All"}})], user_job=written
    )
    assert result.obj["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert result.applied == []


def test_pure_and_idempotent() -> None:
    original = job()
    snapshot = copy.deepcopy(original)
    policies = [policy("team", TEAM)]
    once = apply_policy_defaults(original, policies)
    assert original == snapshot
    twice = apply_policy_defaults(once.obj, policies)
    assert twice.obj == once.obj
    assert twice.applied == []


def test_no_defaults_no_change() -> None:
    result = apply_policy_defaults(job(), [policy("empty", {})])
    assert result.obj == job()
    assert result.applied == []
