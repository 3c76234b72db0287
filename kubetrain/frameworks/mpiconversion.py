"""MPIJob conversion between `kubeflow.org/v1` (training-operator v1's layout) and
`kubeflow.org/v2beta1` (mpi-operator's, the storage version), and the CRD conversion webhook's
ConversionReview (apiextensions.k8s.io/v1) built on it. Pure. docs/behaviour.md §1, "MPIJob
versions and conversion".

The two share every field but four on each side, so conversion is lossless: what one version
has no field for travels in an annotation of the other and comes back on the way back.

- v1 → v2beta1: `spec.mainContainer` and the spec-level `spec.cleanPodPolicy` leave the spec
  and are recorded in the annotation `kubetrain.io/mpijob-v1-fields` (JSON). The spec-level
  `cleanPodPolicy` also becomes `spec.runPolicy.cleanPodPolicy` when that is unset — the meaning
  training-operator gives it — and the record says so, so the way back removes the copy.
- v2beta1 → v1: `runLauncherAsWorker`, `mpiImplementation`, `sshAuthMountPath` and
  `launcherCreationPolicy` leave the spec into `kubetrain.io/mpijob-v2beta1-fields`.
- Everything else — metadata (but those two annotations), the replica specs, `slotsPerWorker`,
  `runPolicy`, the status — is copied unchanged; `apiVersion` is rewritten. Annotations are
  written with sorted keys, so conversion is deterministic. An annotation that is not a JSON
  object of the expected fields is left alone (never a reason to fail a read).

The webhook (`conversion_review`) answers as the API server expects: the request's `uid`
echoed, `convertedObjects` in request order, `result.status` Success — or Failure with a message
(not an HTTP error) for a desired version or an object it does not convert.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.groups import KUBEFLOW_GROUP
from kubetrain.api.mpijob_v1 import ANNOTATION_V1_FIELDS, ANNOTATION_V2BETA1_FIELDS

KIND = "MPIJob"
V1 = f"{KUBEFLOW_GROUP}/v1"
V2BETA1 = f"{KUBEFLOW_GROUP}/v2beta1"
VERSIONS = (V2BETA1, V1)  # the storage version first
V1_ONLY = ("mainContainer", "cleanPodPolicy")
V2BETA1_ONLY = ("runLauncherAsWorker", "mpiImplementation", "sshAuthMountPath", "launcherCreationPolicy")
# The record's flags for the spec-level cleanPodPolicy copied into runPolicy.
_COPIED, _ADDED = "cleanPodPolicyCopied", "runPolicyAdded"
REVIEW_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")


class ConversionError(ValueError):
    """The object or the desired version is not one this webhook converts."""


class BadConversionReview(ValueError):
    """The body is not a ConversionReview request (answered with HTTP 400)."""


def _dumps(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def _take_record(annotations: dict[str, Any], key: str, fields: tuple[str, ...]) -> dict[str, Any]:
    """The annotation's record, removed from `annotations` — or {} (annotation left) when it is
    not a JSON object of `fields` only."""
    raw = annotations.get(key)
    if not isinstance(raw, str):
        return {}
    try:
        record = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(record, dict) or not set(record) <= set(fields):
        return {}
    del annotations[key]
    return record


def _annotations(out: dict[str, Any]) -> dict[str, Any]:
    meta = out.get("metadata")
    if not isinstance(meta, dict):
        return {}
    current = meta.get("annotations")
    return dict(current) if isinstance(current, dict) else {}


def _set_annotations(out: dict[str, Any], annotations: dict[str, Any]) -> None:
    meta = out.get("metadata")
    if not isinstance(meta, dict):
        if not annotations:
            return
        meta = out["metadata"] = {}
    if annotations:
        meta["annotations"] = annotations
    elif isinstance(meta.get("annotations"), dict):
        del meta["annotations"]  # emptied by taking our record: the object had none of its own


def to_v2beta1(obj: dict[str, Any]) -> dict[str, Any]:
    """A `kubeflow.org/v1` MPIJob as `kubeflow.org/v2beta1`."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = V2BETA1
    annotations = _annotations(out)
    spec = out.get("spec")
    if isinstance(spec, dict):
        spec.update(_take_record(annotations, ANNOTATION_V2BETA1_FIELDS, V2BETA1_ONLY))
        record: dict[str, Any] = {}
        if "mainContainer" in spec:
            record["mainContainer"] = spec.pop("mainContainer")
        if "cleanPodPolicy" in spec:
            value = record["cleanPodPolicy"] = spec.pop("cleanPodPolicy")
            if "runPolicy" not in spec:
                spec["runPolicy"] = {}
                record[_ADDED] = True
            run_policy = spec["runPolicy"]
            if isinstance(run_policy, dict) and "cleanPodPolicy" not in run_policy:
                spec["runPolicy"] = {**run_policy, "cleanPodPolicy": value}
                record[_COPIED] = True
        if record:
            annotations[ANNOTATION_V1_FIELDS] = _dumps(record)
    _set_annotations(out, annotations)
    return out


def to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A `kubeflow.org/v2beta1` MPIJob as `kubeflow.org/v1`."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1
    annotations = _annotations(out)
    spec = out.get("spec")
    if isinstance(spec, dict):
        record = _take_record(annotations, ANNOTATION_V1_FIELDS, (*V1_ONLY, _COPIED, _ADDED))
        if "mainContainer" in record:
            spec["mainContainer"] = record["mainContainer"]
        if "cleanPodPolicy" in record:
            value = spec["cleanPodPolicy"] = record["cleanPodPolicy"]
            run_policy = spec.get("runPolicy")
            if (
                record.get(_COPIED)
                and isinstance(run_policy, dict)
                and run_policy.get("cleanPodPolicy") == value
            ):
                run_policy = {k: v for k, v in run_policy.items() if k != "cleanPodPolicy"}
                if record.get(_ADDED) and not run_policy:
                    del spec["runPolicy"]
                else:
                    spec["runPolicy"] = run_policy
        moved = {name: spec.pop(name) for name in V2BETA1_ONLY if name in spec}
        if moved:
            annotations[ANNOTATION_V2BETA1_FIELDS] = _dumps(moved)
    _set_annotations(out, annotations)
    return out


def convert(obj: Any, desired: str) -> dict[str, Any]:
    """`obj` (an MPIJob in one of VERSIONS) in the `desired` apiVersion; ConversionError for
    anything else."""
    supported = " and ".join(VERSIONS)
    if desired not in VERSIONS:
        raise ConversionError(f"cannot convert to {QUOTE.encode(desired)}: MPIJob is served as {supported}")
    if not isinstance(obj, dict):
        raise ConversionError("an object to convert must be a JSON object")
    if obj.get("kind") != KIND:
        raise ConversionError(
            f"cannot convert kind {QUOTE.encode(obj.get('kind'))}: this webhook converts {KIND} only"
        )
    version = obj.get("apiVersion")
    if version not in VERSIONS:
        raise ConversionError(f"cannot convert from {QUOTE.encode(version)}: MPIJob is served as {supported}")
    if version == desired:
        return copy.deepcopy(obj)
    return to_v1(obj) if desired == V1 else to_v2beta1(obj)


def conversion_review(review: Any) -> dict[str, Any]:
    """The ConversionReview answering `review` (its request part). BadConversionReview when it
    is not a ConversionReview request at all."""
    if not isinstance(review, dict):
        raise BadConversionReview("the body must be a JSON object (a ConversionReview)")
    api_version = review.get("apiVersion")
    if review.get("kind") != "ConversionReview" or api_version not in REVIEW_VERSIONS:
        raise BadConversionReview(
            f"expected kind ConversionReview in {' or '.join(REVIEW_VERSIONS)}, "
            f"got {QUOTE.encode(review.get('kind'))} in {QUOTE.encode(api_version)}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadConversionReview("the ConversionReview has no request")
    uid, desired, objects = request.get("uid"), request.get("desiredAPIVersion"), request.get("objects")
    if not isinstance(uid, str) or not uid:
        raise BadConversionReview("request.uid must be a non-empty string")
    if not isinstance(desired, str) or not isinstance(objects, list):
        raise BadConversionReview(
            "request.desiredAPIVersion (a string) and request.objects (a list) are required"
        )
    response: dict[str, Any] = {"uid": uid}
    try:
        response["convertedObjects"] = [convert(o, desired) for o in objects]
        response["result"] = {"status": "Success"}
    except ConversionError as err:
        response["convertedObjects"] = []
        response["result"] = {"status": "Failure", "message": str(err)}
    return {"apiVersion": api_version, "kind": "ConversionReview", "response": response}


def answer(body: bytes) -> bytes:
    """The webhook's HTTP body for a request body (BadConversionReview: not JSON, or not a
    ConversionReview request)."""
    try:
        review = json.loads(body)
    except ValueError as err:
        raise BadConversionReview(f"the body is not JSON: {err}") from None
    return json.dumps(conversion_review(review), separators=(",", ":")).encode()
