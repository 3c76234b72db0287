"""`metav1.Status` error bodies worded and shaped exactly like kube-apiserver's.

Every failure the emulated API server returns is an `ApiError`; `ApiError.status()` is the JSON
body (kind Status, apiVersion v1, metadata {}, status Failure, message, reason, details, code).
The constructors mirror `k8s.io/apimachinery/pkg/api/errors` (NewNotFound, NewConflict, ...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kubetrain.devcluster.apiserver.base.types import GroupResource


@dataclass(frozen=True, slots=True)
class Cause:
    """One `details.causes[]` entry: reason (e.g. FieldValueRequired), message, field path."""

    reason: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class ApiError(Exception):
    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)  # the Status's ListMeta (e.g. continue)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.metadata),
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # StatusReasonUnknown ("") is omitted
            body["reason"] = self.reason
        if self.details:
            body["details"] = self.details
        body["code"] = self.code
        return body

    def body(self) -> bytes:
        return json.dumps(self.status()).encode()


def _qualified(gr: GroupResource) -> str:
    return f"{gr.resource}.{gr.group}" if gr.group else gr.resource


def _details(gr: GroupResource, name: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if gr.group:
        details["group"] = gr.group
    details["kind"] = gr.resource
    details.update(extra)
    return details


def not_found(gr: GroupResource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{_qualified(gr)} "{name}" not found', _details(gr, name))


def already_exists(gr: GroupResource, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{_qualified(gr)} "{name}" already exists', _details(gr, name))


def conflict(gr: GroupResource, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(gr)} "{name}": {why}',
        _details(gr, name),
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    """422 Invalid: `Kind.group "name" is invalid: path: Required value` (list form for several)."""
    qualified_kind = f"{kind}.{group}" if group else kind
    texts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [c.to_dict() for c in causes]
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def internal_error(message: str) -> ApiError:
    return ApiError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def forbidden(gr: GroupResource, name: str, why: str) -> ApiError:
    target = f'{_qualified(gr)} "{name}"' if name else _qualified(gr)
    return ApiError(403, "Forbidden", f"{target} is forbidden: {why}", _details(gr, name))


def method_not_allowed(verb: str) -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_old(requested: int, oldest: int) -> ApiError:
    return gone(f"too old resource version: {requested} ({oldest})")


# k8s.io/apiserver storage/etcd3/errors.go: `expired`, `inconsistentContinue`.
LIST_EXPIRED = "The resourceVersion for the provided list is too old."
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


def continue_expired(token: str) -> ApiError:
    """A compacted continue token (etcd3/errors.go handleCompactedErrorForPaging): 410 Expired
    whose Status carries `token`, resuming from the same key at the latest version."""
    return ApiError(410, "Expired", CONTINUE_EXPIRED, metadata={"continue": token})


def too_large(requested: int, current: int) -> ApiError:
    return ApiError(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


def for_status_code(code: int, gr: GroupResource, name: str, message: str | None = None) -> ApiError:
    """An error of the kind kube-apiserver returns with this HTTP status (used by fault injection)."""
    if code == 409:
        return conflict(gr, name, message or STALE)
    if code == 429:
        return ApiError(
            429,
            "TooManyRequests",
            message or "Too many requests, please try again later.",
            {"retryAfterSeconds": 1},
            {"Retry-After": "1"},
        )
    if code == 504:
        return ApiError(
            504,
            "Timeout",
            message or "Timeout: request did not complete within the allotted timeout",
            {"retryAfterSeconds": 1},
        )
    if code == 404:
        return not_found(gr, name)
    if code == 410:
        return gone(message or "too old resource version")
    if code == 503:
        return ApiError(
            503, "ServiceUnavailable", message or "the server is currently unable to handle the request"
        )
    if code == 500:
        text = message or "an error on the server has prevented the request from succeeding"
        return ApiError(
            500, "InternalError", f"Internal error occurred: {text}", {"causes": [{"message": text}]}
        )
    return ApiError(code, "Unknown", message or f"injected failure with status {code}")
