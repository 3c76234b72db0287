"""The answers to big reviews (a TFJob of 4 replica types sharing one template of 4 or 16
containers: ~20 and ~74 KB, the webhook benchmarks' large and xlarge jobs) are pinned, and are
the same whether the decider reads the body's shape marks itself or is handed the ones the
server computed for the tier (kubetrain.webhook.decider.review_marks)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from jobs import big_tf_job

from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.decider import SHAPE_CHECK_BYTES, Decider, review_marks
from kubetrain.webhook.review import request_review
from kubetrain.webhook.tiers import INLINE_BYTES, decided_inline

TYPES = ("Chief", "PS", "Worker", "Evaluator")
PATCH = [
    op
    for t in TYPES
    for op in (
        {
            "op": "add",
            "path": f"/spec/tfReplicaSpecs/{t}/template/spec/containers/0/ports/1",
            "value": {"name": "tfjob-port", "containerPort": 2222},
        },
        {"op": "add", "path": f"/spec/tfReplicaSpecs/{t}/restartPolicy", "value": "Never"},
    )
] + [
    {"op": "add", "path": "/spec/runPolicy/cleanPodPolicy", "value": "Running"},
    {"op": "add", "path": "/spec/runPolicy/suspend", "value": False},
]


def answers(body: bytes, webhook: str) -> dict[str, Any]:
    """The response, the same with the server's marks as without."""
    _, answer, _ = Decider().answer(body, webhook)
    _, with_marks, _ = Decider().answer(body, webhook, review_marks(body))
    assert with_marks == answer
    response: dict[str, Any] = orjson.loads(answer)["response"]
    return response


@pytest.mark.parametrize("containers", [4, 16])
def test_a_big_job_is_patched_with_its_defaults_and_the_defaulted_job_is_allowed(containers: int) -> None:
    job = big_tf_job("big", containers)
    submitted = orjson.dumps(request_review(job))
    if containers == 16:  # over the shape proof's threshold and the always-inline tier
        assert len(submitted) > INLINE_BYTES > SHAPE_CHECK_BYTES
        assert decided_inline(submitted, review_marks(submitted))
    mutated = answers(submitted, "mutate")
    assert mutated["allowed"] is True and mutated["patchType"] == "JSONPatch"
    assert orjson.loads(base64.b64decode(mutated["patch"])) == PATCH
    defaulted = orjson.dumps(request_review(default_job(job).obj))
    assert answers(defaulted, "validate") == {"uid": mutated["uid"], "allowed": True}


def test_a_big_job_over_the_replica_limit_is_refused_naming_the_limit() -> None:
    body = orjson.dumps(request_review(default_job(big_tf_job("big", 16)).obj))
    _, answer, _ = Decider(max_replicas=10).answer(body, "validate", review_marks(body))
    response = orjson.loads(answer)["response"]
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        'TFJob "big" is invalid: spec.tfReplicaSpecs: Invalid: the job has 38 replicas in total; '
        "this operator allows at most 10 replicas per job (--max-replicas-per-job)"
    )
