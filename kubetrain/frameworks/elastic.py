"""What elastic frameworks (PyTorch, Paddle) share about `spec.elasticPolicy` and its Workers:
the minReplicas/maxReplicas defaults, the bounds and HPA the hooks report, and the validation of
the bounds against the Worker count. Pure; each framework adds its own fields around these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import FieldError, invalid, required
from kubetrain.frameworks.base import Autoscaling, ReplicaBounds
from kubetrain.frameworks.checks import replica_count, replica_path


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def default_bounds(elastic: dict[str, Any], workers: int | None) -> None:
    """minReplicas/maxReplicas from each other, else both from the Worker count (in place;
    `workers` None: no Worker count to take them from)."""
    min_r, max_r = elastic.get("minReplicas"), elastic.get("maxReplicas")
    if min_r is None and max_r is not None:
        elastic["minReplicas"] = max_r
    elif max_r is None and min_r is not None:
        elastic["maxReplicas"] = min_r
    elif min_r is None and max_r is None and workers is not None:
        elastic["minReplicas"] = workers
        elastic["maxReplicas"] = workers


def bounds(spec: Mapping[str, Any]) -> ReplicaBounds | None:
    """elasticPolicy minReplicas..maxReplicas of an elastic job (None without elasticPolicy)."""
    elastic = spec.get("elasticPolicy")
    if not isinstance(elastic, Mapping):
        return None
    return _int(elastic.get("minReplicas")), _int(elastic.get("maxReplicas"))


def autoscaling(spec: Mapping[str, Any]) -> Autoscaling | None:
    """An HPA within minReplicas..maxReplicas when elasticPolicy.metrics is non-empty."""
    policy = spec.get("elasticPolicy")
    if not isinstance(policy, Mapping):
        return None
    metrics = policy.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        return None
    return Autoscaling(_int(policy.get("minReplicas")), _int(policy.get("maxReplicas")), metrics)


def worker_bounds_errors(
    kind: str,
    base_path: str,
    replica_field: str,
    replicas: Mapping[str, Any],
    min_r: int | None,
    max_r: int | None,
) -> list[FieldError]:
    """1 ≤ minReplicas ≤ maxReplicas, and Workers present with a count within them."""
    errors: list[FieldError] = []
    path = f"{base_path}.elasticPolicy"
    worker_path = replica_path(base_path, replica_field, "Worker")
    if min_r is not None and min_r < 1:
        errors.append(invalid(f"{path}.minReplicas", f"must be at least 1, got {min_r}"))
    if min_r is not None and max_r is not None and max_r < min_r:
        errors.append(
            invalid(
                f"{path}.maxReplicas",
                f"must be greater than or equal to minReplicas ({min_r}), got {max_r}",
            )
        )
    if "Worker" not in replicas:
        errors.append(required(worker_path, f"an elastic {kind} (spec.elasticPolicy set) needs Workers"))
        return errors
    workers = replica_count(replicas["Worker"])
    if workers < 1:
        errors.append(invalid(f"{worker_path}.replicas", f"must be at least 1 in an elastic {kind}"))
    elif min_r is not None and max_r is not None and min_r <= max_r and not min_r <= workers <= max_r:
        errors.append(
            invalid(
                f"{worker_path}.replicas",
                f"{workers} is outside elasticPolicy minReplicas..maxReplicas ({min_r}..{max_r})",
            )
        )
    return errors


def max_restarts_errors(base_path: str, max_restarts: int | None) -> list[FieldError]:
    if max_restarts is not None and max_restarts < 0:
        return [
            invalid(
                f"{base_path}.elasticPolicy.maxRestarts",
                f"must be greater than or equal to 0, got {max_restarts}",
            )
        ]
    return []
