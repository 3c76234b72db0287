"""Writes to the scale subresource (`kubectl scale`, HPAs) get the replica rules of a spec update."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.configurations import webhook_configurations
from kubetrain.webhook.review import AdmissionRequest, parse_review, request_review
from kubetrain.webhook.server import WebhookServer
from kubetrain.webhook.validate import validate_scale


def pytorchjob(workers: int, *, elastic: bool = False, suspend: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "pytorch", "image": "p"}]}},
            },
            "Worker": {
                "replicas": workers,
                "template": {"spec": {"containers": [{"name": "pytorch", "image": "p"}]}},
            },
        }
    }
    if elastic:
        del spec["pytorchReplicaSpecs"]["Master"]
        spec["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4}
    if suspend:
        spec["runPolicy"] = {"suspend": True}
    obj = {"apiVersion": "kubetrain.io/v1", "kind": "PyTorchJob", "metadata": {"name": "j", "namespace": "n"}}
    return default_job({**obj, "spec": spec}).obj


def scale_review(old: int, new: int) -> AdmissionRequest:
    def scale(n: int) -> dict[str, Any]:
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": "j", "namespace": "n"},
            "spec": {"replicas": n},
        }

    review = request_review(scale(new), operation="UPDATE", old=scale(old), sub_resource="scale")
    review["request"]["resource"] = {"group": "kubetrain.io", "version": "v1", "resource": "pytorchjobs"}
    return parse_review(review)


@pytest.mark.parametrize(
    ("job", "new", "allowed", "fragment"),
    [
        (
            pytorchjob(3),
            4,
            False,
            "spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: can only change while",
        ),
        (pytorchjob(3, suspend=True), 4, True, ""),
        (pytorchjob(2, elastic=True), 3, True, ""),
        (pytorchjob(2, elastic=True), 6, False, "6 is outside elasticPolicy minReplicas..maxReplicas (1..4)"),
        (pytorchjob(3), 3, True, ""),
        (None, 4, True, ""),  # the job is gone: the API server answers NotFound itself
    ],
)
def test_scale_rules(job: dict[str, Any] | None, new: int, allowed: bool, fragment: str) -> None:
    old = 3 if job is None else job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]
    response = validate_scale(scale_review(old, new), job)
    assert response.allowed is allowed
    assert fragment in response.message


def test_scale_over_the_replica_limit_is_refused() -> None:
    response = validate_scale(scale_review(3, 50), pytorchjob(3, suspend=True), max_replicas=10)
    assert not response.allowed
    assert "51 replicas in total" in response.message and "at most 10" in response.message


def test_server_reads_the_job_of_a_scale_review() -> None:
    read: list[tuple[str, str]] = []

    async def reader(request: AdmissionRequest) -> dict[str, Any] | None:
        read.append((request.namespace, request.name))
        return pytorchjob(3)

    server = WebhookServer(cert_dir="/nonexistent", job_reader=reader)
    review = scale_review(3, 4)
    _, body, result = asyncio.run(server._answer_scale(review))
    assert read == [("n", "j")]
    assert result == "denied" and b"can only change while the job is suspended" in body


def test_validating_configuration_names_the_scale_subresource() -> None:
    _, validating = webhook_configurations("https://127.0.0.1:9443", b"ca")
    hook = next(h for h in validating["webhooks"] if h["name"] == "validate.jobs.kubetrain.io")
    scale_rules = [r for r in hook["rules"] if any(res.endswith("/scale") for res in r["resources"])]
    assert {"pytorchjobs/scale", "paddlejobs/scale"} <= set(scale_rules[0]["resources"])
    assert scale_rules == [
        {
            "apiGroups": ["kubetrain.io"],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            # every kind with a scalable replica type (elastic PyTorch and Paddle Workers)
            "resources": [f"{f.plural}/scale" for f in FRAMEWORKS.values() if f.scalable_replica_type],
            "scope": "Namespaced",
        }
    ]
