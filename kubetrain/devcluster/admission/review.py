"""AdmissionReview for devcluster's admission chain — pure: no network, no clock.

What `kubetrain.devcluster.admission.chain` sends and how it reads the answer, worded as
kube-apiserver words it (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook):

- `AdmissionAttributes` (what is being admitted) and `AdmissionOutcome` (the chain's answer);
- `Hook`, `hooks()`: the webhooks of the stored configurations, ordered by configuration name
  and then list order;
- `check_dry_run`, `review_version`, `build_request`, `default_options`: the request side;
- `verify_response`, `apply_patch`: webhookrequest.VerifyAdmissionResponse and the JSONPatch
  of a mutating webhook;
- `denial_status`, `calling_error_status`, `rejection`: the metav1.Status the client gets;
- `CallError` (the call failed: failurePolicy decides) and `Rejected` (an answer failurePolicy
  does not soften).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from kubetrain.devcluster.admission.match import bad_request_status, internal_error_status

DEFAULT_TIMEOUT_SECONDS = 10
MAX_TIMEOUT_SECONDS = 30
REVIEW_VERSIONS = ("v1", "v1beta1")
NO_SIDE_EFFECTS_ON_DRY_RUN = ("None", "NoneOnDryRun")


@dataclass
class AdmissionAttributes:
    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    group: str
    version: str
    resource: str
    subresource: str = ""
    kind: tuple[str, str, str] = ("", "", "")  # (group, version, kind) of obj
    namespace: str = ""
    name: str = ""
    obj: dict[str, Any] | None = None
    old_obj: dict[str, Any] | None = None
    dry_run: bool = False
    user_info: dict[str, Any] = field(default_factory=dict)
    namespace_labels: dict[str, str] | None = None  # labels of the request's namespace, if it exists
    options: dict[str, Any] | None = None  # Create/Update/DeleteOptions; a default one if None
    request_version: str = ""  # the client's version when it differs (a converted custom resource)


@dataclass
class AdmissionOutcome:
    allowed: bool
    obj: dict[str, Any] | None
    warnings: list[str]
    status_code: int = 200
    message: str = ""
    reason: str = ""
    status: dict[str, Any] | None = None  # metav1.Status to answer with when not allowed


class CallError(Exception):
    """webhookutil.ErrCallingWebhook: the call failed; failurePolicy decides."""


class Rejected(Exception):
    """An answer for the client that failurePolicy does not soften (denial, dry run, bad patch)."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status.get("message", ""))
        self.status = status


@dataclass
class Hook:
    config: str
    index: int
    webhook: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.config}/{self.index}"

    @property
    def name(self) -> str:
        return str(self.webhook.get("name", ""))

    @property
    def ignore_failures(self) -> bool:
        return self.webhook.get("failurePolicy") == "Ignore"


def hooks(configs: list[dict[str, Any]]) -> list[Hook]:
    ordered = sorted(configs, key=lambda c: str((c.get("metadata") or {}).get("name", "")))
    return [
        Hook(str((c.get("metadata") or {}).get("name", "")), i, w)
        for c in ordered
        for i, w in enumerate(c.get("webhooks") or [])
    ]


def rejection(status: dict[str, Any], warnings: list[str], obj: dict[str, Any] | None) -> AdmissionOutcome:
    return AdmissionOutcome(
        allowed=False,
        obj=obj,
        warnings=warnings,
        status_code=int(status.get("code", 500)),
        message=str(status.get("message", "")),
        reason=str(status.get("reason", "")),
        status=status,
    )


def denial_status(webhook_name: str, result: dict[str, Any] | None) -> dict[str, Any]:
    """webhookerrors.ToStatusErr: the Status returned for a webhook's `allowed: false`."""
    result = dict(result or {})
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    code = result.get("code")
    if not isinstance(code, int) or code < 400:
        code = 400
    if result.get("message"):
        message = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied_by}: {result['reason']}"
    else:
        message = f"{denied_by} without explanation"
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": result.get("status") if result.get("status") not in (None, "", "Success") else "Failure",
        "message": message,
        "code": code,
    }
    if result.get("reason"):
        status["reason"] = result["reason"]
    if result.get("details"):
        status["details"] = result["details"]
    return status


def calling_error_status(webhook_name: str, reason: str) -> dict[str, Any]:
    """apierrors.NewInternalError(ErrCallingWebhook): failurePolicy Fail."""
    return internal_error_status(f'failed calling webhook "{webhook_name}": {reason}')


def timeout_seconds(webhook: dict[str, Any]) -> int:
    value = webhook.get("timeoutSeconds")
    if not isinstance(value, int) or isinstance(value, bool):
        return DEFAULT_TIMEOUT_SECONDS
    return max(1, min(MAX_TIMEOUT_SECONDS, value))


def check_dry_run(hook: Hook) -> None:
    """A dryRun request reaches only webhooks without side effects on dry run."""
    side_effects = hook.webhook.get("sideEffects")
    if side_effects is None:
        raise CallError("Webhook SideEffects is nil")
    if side_effects not in NO_SIDE_EFFECTS_ON_DRY_RUN:
        message = f'admission webhook "{hook.name}" does not support dry run'
        raise Rejected(bad_request_status(message))


def review_version(hook: Hook) -> str:
    """The first AdmissionReview version the webhook accepts that devcluster speaks."""
    accepted = hook.webhook.get("admissionReviewVersions") or []
    version = next((v for v in accepted if v in REVIEW_VERSIONS), None)
    if version is None:
        raise CallError(
            "could not create admission objects: "
            "webhook does not accept known AdmissionReview versions (v1, v1beta1)"
        )
    return str(version)


def default_options(attrs: AdmissionAttributes) -> dict[str, Any] | None:
    kinds = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
    kind = kinds.get(attrs.operation)
    if kind is None:
        return None
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if attrs.dry_run:
        options["dryRun"] = ["All"]
    return options


def build_request(uid: str, attrs: AdmissionAttributes) -> dict[str, Any]:
    """The AdmissionRequest sent to a webhook."""
    kind_group, kind_version, kind = attrs.kind
    gvk = {"group": kind_group, "version": kind_version, "kind": kind}
    gvr = {"group": attrs.group, "version": attrs.version, "resource": attrs.resource}
    request: dict[str, Any] = {
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": {**gvk, "version": attrs.request_version or kind_version},
        "requestResource": {**gvr, "version": attrs.request_version or attrs.version},
        "operation": attrs.operation,
        "userInfo": attrs.user_info,
        "object": attrs.obj,
        "oldObject": attrs.old_obj,
        "dryRun": attrs.dry_run,
        "options": attrs.options if attrs.options is not None else default_options(attrs),
    }
    if attrs.subresource:
        request["subResource"] = attrs.subresource
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return request


def verify_response(body: Any, uid: str, version: str, *, mutating: bool) -> dict[str, Any]:
    """webhookrequest.VerifyAdmissionResponse: the `response` of a valid AdmissionReview."""
    if not isinstance(body, dict) or not body.get("kind"):
        raise CallError(f"failed to call webhook: Object 'Kind' is missing in '{json.dumps(body)}'")
    invalid = "received invalid webhook response: "
    response = body.get("response")
    if not isinstance(response, dict):
        raise CallError(invalid + "webhook response was absent")
    if response.get("uid") != uid:
        raise CallError(invalid + f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    expected = f"admission.k8s.io/{version}"
    if body.get("apiVersion") != expected or body.get("kind") != "AdmissionReview":
        group, _, got_version = str(body.get("apiVersion", "")).rpartition("/")
        raise CallError(
            invalid + f"expected webhook response of {expected}, Kind=AdmissionReview, "
            f"got {group}/{got_version}, Kind={body.get('kind')}"
        )
    has_patch = bool(response.get("patch"))
    has_type = "patchType" in response and response["patchType"] is not None
    if mutating:
        if has_patch and not has_type:
            raise CallError(invalid + "webhook returned response.patch but not response.patchType")
        if has_type and not has_patch:
            raise CallError(invalid + "webhook returned response.patchType but not response.patch")
        if has_type and not response["patchType"]:
            raise CallError(invalid + 'webhook returned invalid response.patchType of ""')
    else:
        if has_patch:
            raise CallError(invalid + "validating webhook may not return response.patch")
        if has_type:
            raise CallError(invalid + "validating webhook may not return response.patchType")
    return response


def apply_patch(hook: Hook, response: dict[str, Any], obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """`obj` with the mutating webhook's JSONPatch applied (`obj` itself without a patch)."""
    encoded = response.get("patch")
    if not encoded:
        return obj
    try:
        ops = json.loads(base64.b64decode(encoded, validate=True))
        if not isinstance(ops, list):
            raise ValueError("a JSON patch must be an array of operations")
        patch = jsonpatch.JsonPatch(ops)
    except (ValueError, TypeError, binascii.Error, jsonpatch.JsonPatchException) as exc:
        raise CallError(f"received undecodable patch in webhook response: {exc}") from exc
    if not ops:
        return obj
    if obj is None:
        raise Rejected(
            internal_error_status(
                f'admission webhook "{hook.name}" attempted to modify the object, '
                "which is not supported for this operation"
            )
        )
    if response.get("patchType") != "JSONPatch":
        raise CallError(f'unsupported patch type "{response.get("patchType")}"')
    try:
        patched = patch.apply(obj)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as exc:
        raise Rejected(internal_error_status(str(exc))) from exc
    if not isinstance(patched, dict):
        raise Rejected(internal_error_status("the patched object is not a JSON object"))
    return patched
