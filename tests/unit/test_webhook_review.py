"""AdmissionReview codec and the mutate/validate decisions, without a server."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest
from jobs import job

from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.mutate import mutate
from kubetrain.webhook.review import (
    AdmissionResponse,
    BadReview,
    decode_review,
    encode_review,
    request_review,
)
from kubetrain.webhook.validate import validate


def tfjob(
    name: str = "mnist", *, workers: int = 2, env: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    # "worker" in lower case on purpose: the webhook canonicalises the replica type's spelling.
    return job(
        "TFJob",
        name,
        {"worker": workers},
        namespace="team-a",
        image="tensorflow/tensorflow:2.15.0",
        container_extra={"env": env} if env else None,
    )


def bad_pytorchjob() -> dict[str, Any]:
    # Invalid on purpose: a bad name, two Masters, a container without an image.
    master = {"replicas": 2, "template": {"spec": {"containers": [{"name": "pytorch"}]}}}
    return job("PyTorchJob", "Bad_Name", {"Master": master}, namespace="team-a")


def decode(obj: dict[str, Any] | None, **kw: Any) -> Any:
    return decode_review(json.dumps(request_review(obj, **kw)).encode())


def apply_patch(original: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    return jsonpatch.apply_patch(original, ops)  # type: ignore[no-any-return]


# ---- codec ---------------------------------------------------------------------------------------
def test_decode_extracts_request_fields() -> None:
    old = tfjob()
    req = decode(tfjob(workers=3), operation="UPDATE", old=old, uid="abc-123", dry_run=True)
    assert (req.uid, req.kind, req.group, req.version) == ("abc-123", "TFJob", "kubetrain.io", "v1")
    assert (req.operation, req.namespace, req.name, req.dry_run) == ("UPDATE", "team-a", "mnist", True)
    assert req.object is not None and req.object["spec"]["tfReplicaSpecs"]["worker"]["replicas"] == 3
    assert req.old_object == old


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"", "empty"),
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not"),
        (b"[]", "must be a JSON object"),
        (
            json.dumps(
                {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}
            ).encode(),
            'apiVersion must be "admission.k8s.io/v1"',
        ),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "Pod"}).encode(),
            'kind must be "AdmissionReview"',
        ),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
            "request must be",
        ),
        (b"[" * 100000 + b"]" * 100000, ""),
    ],
)
def test_decode_rejects_malformed_bodies(body: bytes, fragment: str) -> None:
    with pytest.raises(BadReview) as info:
        decode_review(body)
    assert fragment in str(info.value)


def test_decode_requires_uid_and_object() -> None:
    review = request_review(tfjob())
    del review["request"]["uid"]
    with pytest.raises(BadReview, match=r"request\.uid is required"):
        decode_review(json.dumps(review).encode())
    review = request_review(tfjob())
    review["request"]["object"] = None
    with pytest.raises(BadReview, match=r"request\.object is required for operation CREATE"):
        decode_review(json.dumps(review).encode())
    review = request_review(tfjob(), operation="PATCH")
    with pytest.raises(BadReview, match=r"request\.operation must be one of"):
        decode_review(json.dumps(review).encode())


def test_encode_denial_and_patch_and_warnings() -> None:
    denied = encode_review(AdmissionResponse.deny("u1", "spec.x: Invalid: nope", warnings=["careful"]))
    assert denied == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "u1",
            "allowed": False,
            "status": {
                "status": "Failure",
                "code": 422,
                "message": "spec.x: Invalid: nope",
                "reason": "Invalid",
            },
            "warnings": ["careful"],
        },
    }
    ops = [{"op": "add", "path": "/spec/a", "value": 1}]
    allowed = encode_review(AdmissionResponse(uid="u2", allowed=True, patch=ops))["response"]
    assert allowed["allowed"] is True and "status" not in allowed
    assert json.loads(base64.b64decode(allowed["patch"])) == ops
    assert allowed["patchType"] == "JSONPatch"


def test_encode_keeps_warnings_single_line() -> None:
    body = encode_review(AdmissionResponse.allow("u", ["line one\nline two"]))
    assert body["response"]["warnings"] == ["line one line two"]


# ---- mutate --------------------------------------------------------------------------------------
@pytest.mark.parametrize("gang", [False, True])
def test_mutate_patch_gives_the_defaulted_object(gang: bool) -> None:
    job = tfjob()
    resp = encode_review(mutate(decode(job), gang_scheduling=gang))["response"]
    assert resp["allowed"] is True
    patched = apply_patch(job, resp)
    assert patched == default_job(job, gang_scheduling=gang).obj
    assert "Worker" in patched["spec"]["tfReplicaSpecs"]  # canonical replica type spelling
    assert patched["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    has_min = "minAvailable" in patched["spec"]["runPolicy"].get("schedulingPolicy", {})
    assert has_min is gang


def test_mutate_already_defaulted_job_gets_no_patch() -> None:
    job = default_job(tfjob()).obj
    resp = encode_review(mutate(decode(job)))["response"]
    assert resp["allowed"] is True and "patch" not in resp


def test_mutate_does_not_modify_the_request_object() -> None:
    job = tfjob()
    req = decode(job)
    before = copy.deepcopy(req.object)
    mutate(req)
    assert req.object == before


def test_mutate_unknown_kind_allowed_untouched(caplog: pytest.LogCaptureFixture) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "x"}, "spec": {}}
    resp = encode_review(mutate(decode(pod)))["response"]
    assert resp == {"uid": "00000000-0000-0000-0000-000000000001", "allowed": True}
    assert "not a kubetrain job kind" in caplog.text


def test_mutate_delete_allowed() -> None:
    resp = encode_review(mutate(decode(None, operation="DELETE", old=tfjob())))["response"]
    assert resp["allowed"] is True and "patch" not in resp


# ---- validate ------------------------------------------------------------------------------------
def test_validate_lists_every_error_with_its_path() -> None:
    resp = encode_review(validate(decode(default_job(bad_pytorchjob()).obj)))["response"]
    assert resp["allowed"] is False
    status = resp["status"]
    assert status["code"] == 422 and status["reason"] == "Invalid"
    message = status["message"]
    assert message.startswith('PyTorchJob "Bad_Name" is invalid: [')
    assert "metadata.name: Invalid:" in message
    assert "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1" in message
    assert "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required" in message


def test_validate_valid_job_allowed_with_warnings() -> None:
    job = default_job(tfjob(env=[{"name": "TF_CONFIG", "value": "{}"}])).obj
    resp = encode_review(validate(decode(job)))["response"]
    assert resp["allowed"] is True
    assert any("TF_CONFIG" in w for w in resp["warnings"])


def test_validate_update_applies_immutability() -> None:
    old = default_job(tfjob()).obj
    new = copy.deepcopy(old)
    new["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "other:1"
    resp = encode_review(validate(decode(new, operation="UPDATE", old=old)))["response"]
    assert resp["allowed"] is False
    assert "spec.tfReplicaSpecs[Worker].template" in resp["status"]["message"]
    # the same change on CREATE is fine: immutability needs the old object
    assert encode_review(validate(decode(new)))["response"]["allowed"] is True


def test_validate_metadata_only_update_of_an_invalid_job_is_not_blocked() -> None:
    old = default_job(bad_pytorchjob()).obj
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    new["metadata"]["labels"] = {"a": "b"}
    assert encode_review(validate(decode(new, operation="UPDATE", old=old)))["response"]["allowed"] is True


def test_validate_delete_and_status_subresource_allowed() -> None:
    bad = bad_pytorchjob()
    assert validate(decode(None, operation="DELETE", old=bad)).allowed
    assert validate(decode(bad, operation="UPDATE", old=bad, sub_resource="status")).allowed


def test_validate_unparsable_job_denied_with_paths() -> None:
    job = tfjob()
    job["spec"]["tfReplicaSpecs"]["Worker"] = job["spec"]["tfReplicaSpecs"].pop("worker")
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "two"
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "Sometimes"}
    resp = encode_review(validate(decode(job)))["response"]
    assert resp["allowed"] is False
    assert "spec.tfReplicaSpecs[Worker].replicas" in resp["status"]["message"]
    assert "spec.runPolicy.cleanPodPolicy" in resp["status"]["message"]
