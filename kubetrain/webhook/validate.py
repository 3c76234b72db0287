"""The validating webhook: docs/behaviour.md §3 at apply time.

Every problem is reported at once, in one message that names each field path
(`TFJob "mnist" is invalid: [spec.tfReplicaSpecs[Chief].replicas: Invalid: ..., ...]`, worded
like kube-apiserver's own validation errors); warnings go into the AdmissionReview `warnings`,
which kubectl prints as `Warning: ...`. UPDATE passes the old object so the immutability rules
apply; an update that leaves `spec` unchanged (metadata, finalizers, labels) is never blocked, nor
is a write to a subresource. DELETE and CONNECT are always allowed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from kubetrain.api.errors import FieldError
from kubetrain.api.servicemode import service_mode_errors
from kubetrain.jobs.parse import InvalidJobError
from kubetrain.jobs.validation import validate_job
from kubetrain.policy.limits import PolicyVerdict
from kubetrain.webhook.mutate import is_job_kind
from kubetrain.webhook.policies import PolicyAdmission, is_policy_kind, policy_denial, validate_policy_object
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse

log = logging.getLogger(__name__)


def invalid_message(kind: str, obj: dict[str, Any], errors: Sequence[FieldError]) -> str:
    """`<Kind> "<name>" is invalid: <error>` or `...: [<error>, <error>]` (kube-apiserver wording)."""
    meta = obj.get("metadata")
    name = ""
    if isinstance(meta, dict):
        raw = meta.get("name") or meta.get("generateName") or ""
        name = raw if isinstance(raw, str) else ""
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    return f'{kind} "{name}" is invalid: {listed}'


def validate(request: AdmissionRequest, policies: PolicyAdmission | None = None) -> AdmissionResponse:
    """Answer one validating AdmissionReview request (plus TrainingPolicy limits when given;
    TrainingPolicy objects themselves are validated too)."""
    if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
        return AdmissionResponse.allow(request.uid)
    if is_policy_kind(request.kind):
        return validate_policy_object(request)
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
        # and a changed kubetrain.io/service-mode annotation)
        mode_errors = service_mode_errors(obj, old)
        if mode_errors:
            return AdmissionResponse.deny(request.uid, invalid_message(request.kind, obj, mode_errors))
        if verdict.denials:
            return policy_denial(request.uid, verdict, [])
        return AdmissionResponse.allow(request.uid, verdict.warnings)
    try:
        result = validate_job(obj, old)
    except InvalidJobError as exc:  # a job that does not even parse
        return AdmissionResponse.deny(request.uid, invalid_message(request.kind, obj, exc.errors))
    if result.errors:
        return AdmissionResponse.deny(
            request.uid,
            invalid_message(request.kind, obj, result.errors),
            warnings=result.warnings + verdict.denials + verdict.warnings,
        )
    if verdict.denials:
        return policy_denial(request.uid, verdict, result.warnings)
    return AdmissionResponse.allow(request.uid, result.warnings + verdict.warnings)
