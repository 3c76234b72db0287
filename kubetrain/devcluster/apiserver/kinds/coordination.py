"""coordination.k8s.io/v1 Lease validation, as pkg/apis/coordination/validation ValidateLeaseSpec:
`spec.leaseDurationSeconds` must be greater than 0 and `spec.leaseTransitions` at least 0 when
set. MicroTime fields (acquireTime, renewTime) are stored and served exactly as written."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause


def lease_causes(lease: dict[str, Any]) -> list[Cause]:
    spec = lease.get("spec") or {}
    causes: list[Cause] = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {duration}: must be greater than 0",
                "spec.leaseDurationSeconds",
            )
        )
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {transitions}: must be greater than or equal to 0",
                "spec.leaseTransitions",
            )
        )
    return causes
