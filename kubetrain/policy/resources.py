"""What a job asks for: pod counts and resource totals per replica type (pure)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubetrain.frameworks.registry import get_framework


@dataclass(frozen=True)
class ReplicaGroup:
    """One replica type of a job: its path, pod count and pod template."""

    path: str  # spec.pytorchReplicaSpecs[Worker]
    replica_type: str
    replicas: int
    template: dict[str, Any]


def replica_groups(job: dict[str, Any]) -> Iterator[ReplicaGroup]:
    """Every replica type of a job of a known kind (none for an unknown kind)."""
    framework = get_framework(str(job.get("kind", "")))
    spec = job.get("spec")
    if framework is None or not isinstance(spec, dict):
        return
    field = framework.replica_field
    specs = spec.get(field)
    if not isinstance(specs, dict):
        return
    elastic_max = _elastic_max(spec)
    for rtype, rspec in specs.items():
        if not isinstance(rspec, dict):
            continue
        replicas = rspec.get("replicas")
        count = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1
        if elastic_max is not None and str(rtype).lower() == "worker":
            # An elastic job may scale its Workers up to maxReplicas at any time.
            count = max(count, elastic_max)
        template = rspec.get("template")
        yield ReplicaGroup(
            path=f"spec.{field}[{rtype}]",
            replica_type=str(rtype),
            replicas=max(count, 0),
            template=template if isinstance(template, dict) else {},
        )


def replica_map_path(job: dict[str, Any]) -> str:
    framework = get_framework(str(job.get("kind", "")))
    return f"spec.{framework.replica_field}" if framework else "spec"


def _elastic_max(spec: dict[str, Any]) -> int | None:
    elastic = spec.get("elasticPolicy")
    if not isinstance(elastic, dict):
        return None
    value = elastic.get("maxReplicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
