"""The status a TrainingPolicy reports: observedGeneration, valid, message, a `Valid` condition."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.api.errors import FieldError, format_errors


def _rfc3339(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def policy_status(obj: dict[str, Any], errors: list[FieldError], now: datetime) -> dict[str, Any]:
    """The status for `obj` given its validation errors; `lastTransitionTime` is kept from the
    previous `Valid` condition when its status did not change (so rewriting it is a no-op)."""
    metadata = obj.get("metadata") or {}
    generation = metadata.get("generation")
    valid = not errors
    cond_status = "True" if valid else "False"
    message = "policy is valid and enforced" if valid else format_errors(errors)
    previous = obj.get("status") or {}
    transition = _rfc3339(now)
    for cond in previous.get("conditions") or []:
        if (
            cond.get("type") == "Valid"
            and cond.get("status") == cond_status
            and cond.get("lastTransitionTime")
        ):
            transition = cond["lastTransitionTime"]
    status: dict[str, Any] = {
        "valid": valid,
        "message": message,
        "conditions": [
            {
                "type": "Valid",
                "status": cond_status,
                "reason": "Valid" if valid else "InvalidSpec",
                "message": message,
                "lastTransitionTime": transition,
            }
        ],
    }
    if isinstance(generation, int):
        status["observedGeneration"] = generation
        status["conditions"][0]["observedGeneration"] = generation
    return status
