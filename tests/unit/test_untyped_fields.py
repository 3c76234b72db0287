"""kubetrain.jobs.untypedfields: an update of a kubeflow.org job through Kubeflow's types (Kueue,
the Kubeflow SDK) keeps the stored failure rules those types cannot carry."""

from __future__ import annotations

from typing import Any

from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.untypedfields import keep_untyped_fields

RULES = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}]}


def job(api_version: str, run_policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "PyTorchJob",
        "metadata": {"name": "q"},
        "spec": {
            "runPolicy": run_policy,
            "pytorchReplicaSpecs": {
                "Master": {"template": {"spec": {"containers": [{"name": "pytorch", "image": "i"}]}}}
            },
        },
    }


def test_an_update_that_leaves_the_rules_out_keeps_them() -> None:
    old = job("kubeflow.org/v1", {"suspend": True, "podFailurePolicy": RULES})
    new = job("kubeflow.org/v1", {"suspend": False})
    kept = keep_untyped_fields(new, old)
    assert kept["spec"]["runPolicy"] == {"suspend": False, "podFailurePolicy": RULES}
    assert "podFailurePolicy" not in new["spec"]["runPolicy"]  # the input is not changed
    # what the mutating webhook stores
    assert default_job(new, old=old).obj["spec"]["runPolicy"]["podFailurePolicy"] == RULES


def test_rules_that_are_written_are_taken_as_written() -> None:
    old = job("kubeflow.org/v1", {"podFailurePolicy": RULES})
    none = {"rules": []}
    changed = job("kubeflow.org/v1", {"podFailurePolicy": none})
    assert keep_untyped_fields(changed, old)["spec"]["runPolicy"]["podFailurePolicy"] == none
    # no stored job (CREATE), or the job's own group: as sent
    new = job("kubeflow.org/v1", {})
    assert keep_untyped_fields(new, None) is new
    ours = job("kubetrain.io/v1", {})
    assert keep_untyped_fields(ours, job("kubetrain.io/v1", {"podFailurePolicy": RULES})) is ours
