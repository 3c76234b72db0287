"""`runPolicy` bounds and the operator's replica limit (docs/behaviour.md §3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid, json_int
from kubetrain.api.quantity import QUANTITY_EXAMPLES, is_quantity_string
from kubetrain.frameworks.base import Framework


def run_policy_errors(run_policy: Any, total: int | None) -> list[FieldError]:
    """`total`: the job's replicas (None when some count is not an integer)."""
    if not isinstance(run_policy, dict):
        return []
    errors: list[FieldError] = []
    for name, minimum in (("backoffLimit", 0), ("activeDeadlineSeconds", 1), ("ttlSecondsAfterFinished", 0)):
        value = json_int(run_policy.get(name))
        if value is not None and value < minimum:
            errors.append(
                invalid(f"spec.runPolicy.{name}", f"must be greater than or equal to {minimum}, got {value}")
            )
    scheduling = run_policy.get("schedulingPolicy")
    if not isinstance(scheduling, dict):
        return errors
    base = "spec.runPolicy.schedulingPolicy"
    min_available = json_int(scheduling.get("minAvailable"))
    if min_available is not None and (min_available < 1 or (total is not None and min_available > total)):
        upper = f"{total} (the total of replicas)" if total is not None else "the total of replicas"
        errors.append(invalid(f"{base}.minAvailable", f"must be between 1 and {upper}, got {min_available}"))
    timeout = json_int(scheduling.get("scheduleTimeoutSeconds"))
    if timeout is not None and timeout < 0:
        errors.append(
            invalid(f"{base}.scheduleTimeoutSeconds", f"must be greater than or equal to 0, got {timeout}")
        )
    resources = scheduling.get("minResources")
    if isinstance(resources, dict):
        for rname, quantity in resources.items():
            if isinstance(quantity, str) and not is_quantity_string(quantity):
                errors.append(
                    invalid(
                        f"{base}.minResources[{rname}]",
                        f"{QUOTE.encode(quantity)} is not a valid quantity: use e.g. {QUANTITY_EXAMPLES}",
                    )
                )
    return errors


def max_replicas_errors(
    framework: Framework, most: Mapping[Any, int], total: int | None, limit: int
) -> list[FieldError]:
    """The job's replicas (`most`: per type, a scalable type counted at its maximum; `total`:
    as written, None when some count is not an integer) against the operator's limit."""
    if total is None:
        return []
    largest = sum(most.values())
    if largest <= limit:
        return []
    scaled = (
        f" ({framework.scalable_replica_type}s counted at the maximum of {framework.bounds_name})"
        if largest > total
        else ""
    )
    return [
        invalid(
            f"spec.{framework.replica_field}",
            f"the job has {largest} replicas in total{scaled}; this operator allows at most {limit} "
            "replicas per job (--max-replicas-per-job)",
        )
    ]
