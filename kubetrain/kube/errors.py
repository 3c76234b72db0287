"""Errors of the kube layer: `ApiError` (an error answer of the API server, or status 0 when
no answer came) with kube's error classes as properties, and `GoneError` for 410 Gone.

    try:
        await client.replace_status(job_resource("TFJob"), job)
    except ApiError as err:
        if err.is_conflict: ...        # 409 stale resourceVersion: re-read and retry
        elif err.is_not_found: ...     # 404
        elif err.is_retryable: ...     # transport failure, 429, 5xx
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ApiError(Exception):
    """An error answer of the API server (or status 0: the request did not get an answer)."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body

    @property
    def is_not_found(self) -> bool:
        return self.status == 404

    @property
    def is_already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def is_conflict(self) -> bool:
        """409 from optimistic concurrency (stale resourceVersion / failed precondition)."""
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def is_gone(self) -> bool:
        return self.status == 410

    @property
    def is_invalid(self) -> bool:
        return self.status == 422

    @property
    def is_forbidden(self) -> bool:
        return self.status == 403

    @property
    def is_too_many_requests(self) -> bool:
        return self.status == 429

    @property
    def is_retryable(self) -> bool:
        """Transport failures, throttling and server-side errors: worth retrying later."""
        return self.status in (0, 429, 500, 502, 503, 504)


class GoneError(ApiError):
    """410 Gone: the resourceVersion (watch) or continue token (list) is too old; relist."""


def api_error(status: int, body: Any, default_reason: str = "") -> ApiError:
    """Build the ApiError for an error answer (a metav1.Status dict when the server sent one)."""
    reason, message = default_reason, ""
    if isinstance(body, Mapping):
        reason = str(body.get("reason") or default_reason)
        message = str(body.get("message") or "")
        if isinstance(body.get("code"), int) and status == 0:
            status = body["code"]
    elif isinstance(body, str):
        message = body
    cls = GoneError if status == 410 else ApiError
    return cls(status, reason, message, body)


class KubeconfigError(Exception):
    """The kubeconfig (or in-cluster configuration) cannot be used; `str()` is one line naming
    the file and what is wrong with it. `other_file` says whether pointing at another kubeconfig
    is the fix (a missing or malformed file) or the message already names the fix within it."""

    def __init__(self, message: str, other_file: bool = True) -> None:
        super().__init__(message)
        self.other_file = other_file


class ApiUnreachable(Exception):
    """The API server did not answer at start-up (or refused the credentials); `str()` is one
    line naming the server and what to check."""
