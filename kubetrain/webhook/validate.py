"""The validating webhook: docs/behaviour.md §3 at apply time.

Every problem is reported at once, in one message that names each field path
(`TFJob "mnist" is invalid: [spec.tfReplicaSpecs[Chief].replicas: Invalid: ..., ...]`, worded
like kube-apiserver's own validation errors); warnings go into the AdmissionReview `warnings`,
which kubectl prints as `Warning: ...`. UPDATE passes the old object so the immutability rules
apply; an update that leaves `spec` unchanged (metadata, finalizers, labels) is never blocked, nor
is a write to a subresource other than scale. DELETE and CONNECT are always allowed.

A write to the scale subresource (`kubectl scale`, an HPA) arrives as an autoscaling/v1 `Scale`
without the job; the server reads the job and `validate_scale` applies the same rules as to a
spec update setting `replicas` of the scaled replica type (Workers): only while the job is
suspended, or within minReplicas..maxReplicas for elastic PyTorch Workers, and never over the
operator's replica limit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from kubetrain.api.errors import FieldError
from kubetrain.api.servicemode import service_mode_errors
from kubetrain.frameworks.registry import converted_versions, get_framework
from kubetrain.jobs.createdversion import created_version_errors
from kubetrain.jobs.kubedl import kubedl_annotation_update_errors
from kubetrain.jobs.parse import InvalidJobError
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS, validate_job
from kubetrain.policy.limits import PolicyVerdict
from kubetrain.policy.podsecurity import enforce_level, job_pod_security_errors
from kubetrain.webhook.crons import is_cron_kind, validate_cron_object
from kubetrain.webhook.mutate import is_job_kind
from kubetrain.webhook.policies import PolicyAdmission, is_policy_kind, policy_denial, validate_policy_object
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse

log = logging.getLogger(__name__)


# The denial message lists at most this many errors and is cut at this many characters.
MAX_LISTED_ERRORS = 100
MAX_MESSAGE_CHARS = 32 * 1024


def invalid_message(kind: str, obj: dict[str, Any], errors: Sequence[FieldError]) -> str:
    """`<Kind> "<name>" is invalid: <error>` or `...: [<error>, <error>]` (kube-apiserver wording),
    at most MAX_LISTED_ERRORS errors and MAX_MESSAGE_CHARS characters."""
    meta = obj.get("metadata")
    name = ""
    if isinstance(meta, dict):
        raw = meta.get("name") or meta.get("generateName") or ""
        name = raw[:253] if isinstance(raw, str) else ""
    shown = [str(e) for e in errors[:MAX_LISTED_ERRORS]]
    if len(errors) > MAX_LISTED_ERRORS:
        shown.append(f"and {len(errors) - MAX_LISTED_ERRORS} more errors")
    listed = shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"
    message = f'{kind} "{name}" is invalid: {listed}'
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 30] + "... (message truncated)"
    return message


def validate(
    request: AdmissionRequest,
    policies: PolicyAdmission | None = None,
    *,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
) -> AdmissionResponse:
    """Answer one validating AdmissionReview request (plus TrainingPolicy limits when given;
    TrainingPolicy objects themselves are validated too). `max_replicas`: the operator-wide
    limit on a job's total replicas."""
    if is_scale_review(request) and is_job_kind(request.kind):
        # the whole job as object/oldObject (a hand-made review: kube-apiserver and devcluster
        # send Scales, for which the server reads the job and calls validate_scale)
        return validate_scale(request, request.old_object, max_replicas=max_replicas)
    if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
        return AdmissionResponse.allow(request.uid)
    if is_policy_kind(request.kind):
        return validate_policy_object(request)
    if is_cron_kind(request.kind):
        return validate_cron_object(request)
    if not is_job_kind(request.kind):
        log.warning(
            "validate: %s %s/%s is not a kubetrain job kind; allowed "
            "(check the webhook configuration's rules)",
            request.kind,
            request.namespace,
            request.name,
        )
        return AdmissionResponse.allow(request.uid)
    obj = request.object
    assert obj is not None  # decode_review guarantees an object for CREATE/UPDATE
    old = request.old_object if request.operation == "UPDATE" else None
    # Platform policy limits (ratcheted on UPDATE: only new violations are denied).
    verdict = policies.check(request) if policies is not None else PolicyVerdict()
    if old is not None and old.get("spec") == obj.get("spec"):
        # metadata-only changes are never blocked by the job rules (only by new policy violations
        # and a changed kubetrain.io/service-mode or kubetrain.io/created-api-version annotation)
        mode_errors = (
            service_mode_errors(obj, old)
            + created_version_errors(obj, old)
            + kubedl_annotation_update_errors(obj, old)  # `kubectl annotate` of a KubeDL config
        )
        if mode_errors:
            return AdmissionResponse.deny(request.uid, invalid_message(request.kind, obj, mode_errors))
        if verdict.denials:
            return policy_denial(request.uid, verdict, [])
        return AdmissionResponse.allow(request.uid, verdict.warnings)
    try:
        result = validate_job(obj, old, max_replicas=max_replicas)
    except InvalidJobError as exc:  # a job that does not even parse
        return AdmissionResponse.deny(request.uid, invalid_message(request.kind, obj, exc.errors))
    warning = _conversion_warning(request) if old is None else None
    if warning:
        result.warnings.insert(0, warning)
    if policies is not None and old is None:
        # Pod Security of the namespace (templates are immutable: checked on CREATE only)
        result.errors.extend(_pod_security_errors(request, obj, policies))
    if result.errors:
        return AdmissionResponse.deny(
            request.uid,
            invalid_message(request.kind, obj, result.errors),
            warnings=result.warnings + verdict.denials + verdict.warnings,
        )
    if verdict.denials:
        return policy_denial(request.uid, verdict, result.warnings)
    return AdmissionResponse.allow(request.uid, result.warnings + verdict.warnings)


def _conversion_warning(request: AdmissionRequest) -> str | None:
    """The client wrote the job at a version served through the conversion webhook (a
    kubeflow.org/v1 MPIJob): the API server converted it for this webhook, and requestKind names
    what the client used — the framework says what that changes."""
    kind = request.raw.get("requestKind")
    if not isinstance(kind, dict) or kind.get("version") == request.version:
        return None
    fw = get_framework(str(kind.get("kind")))
    version = str(kind.get("version"))
    if fw is None or version not in converted_versions(fw.kind, str(kind.get("group"))):
        return None
    return fw.conversion_warning(version)


def _pod_security_errors(
    request: AdmissionRequest, obj: dict[str, Any], policies: PolicyAdmission
) -> list[FieldError]:
    """The templates against the namespace's `pod-security.kubernetes.io/enforce` level
    (TrainingPolicies' `limits.podSecurity` are checked with the other policy limits)."""
    level = enforce_level(policies.index.namespace_labels(request.namespace))
    return job_pod_security_errors(obj, level)


SCALED_REPLICA_TYPE = "Worker"  # the CRD's scale subresource: .spec.<replicas field>.Worker.replicas


def is_scale_review(request: AdmissionRequest) -> bool:
    """An UPDATE of a job's scale subresource."""
    return request.sub_resource == "scale" and request.operation == "UPDATE"


def needs_job(request: AdmissionRequest) -> bool:
    """A scale review carrying autoscaling/v1 Scales (as kube-apiserver sends it): the job must be
    read before validate_scale can answer."""
    return is_scale_review(request) and request.kind == "Scale"


def _scale_replicas(obj: dict[str, Any] | None) -> Any:
    """`spec.replicas` of a Scale, or the scaled replica type's `replicas` of a whole job."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return None
    if obj is not None and obj.get("kind") != "Scale":
        framework = get_framework(str(obj.get("kind")))
        replica_map = spec.get(framework.replica_field) if framework is not None else None
        rspec = replica_map.get(SCALED_REPLICA_TYPE) if isinstance(replica_map, dict) else None
        return rspec.get("replicas", 1) if isinstance(rspec, dict) else None
    return spec.get("replicas")


def validate_scale(
    request: AdmissionRequest, job: dict[str, Any] | None, *, max_replicas: int = DEFAULT_MAX_REPLICAS
) -> AdmissionResponse:
    """Answer a scale-subresource review given the stored `job` (None: it is gone, and the API
    server will answer the write with NotFound itself)."""
    new = _scale_replicas(request.object)
    if job is None or new == _scale_replicas(request.old_object):
        return AdmissionResponse.allow(request.uid)
    kind = str(job.get("kind") or "")
    framework = get_framework(kind)
    spec = job.get("spec")
    replica_map = spec.get(framework.replica_field) if framework and isinstance(spec, dict) else None
    if framework is None or not isinstance(spec, dict) or not isinstance(replica_map, dict):
        return AdmissionResponse.allow(request.uid)  # nothing kubetrain can run; the controller reports it
    rspec = replica_map.get(SCALED_REPLICA_TYPE)
    scaled = {
        **job,
        "spec": {
            **spec,
            framework.replica_field: {
                **replica_map,
                SCALED_REPLICA_TYPE: {**(rspec if isinstance(rspec, dict) else {}), "replicas": new},
            },
        },
    }
    result = validate_job(scaled, job, max_replicas=max_replicas)
    replicas_path = f"spec.{framework.replica_field}[{SCALED_REPLICA_TYPE}].replicas"
    errors = [e for e in result.errors if e.path in (replicas_path, f"spec.{framework.replica_field}")]
    if not errors:
        return AdmissionResponse.allow(request.uid)
    return AdmissionResponse.deny(request.uid, invalid_message(kind, job, errors))
