"""What a job asks for: pod counts and resource totals per replica type (pure)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubetrain.api.podresources import replica_count
from kubetrain.frameworks.base import Framework
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
    for rtype, rspec in specs.items():
        if not isinstance(rspec, dict):
            continue
        count = replica_count(rspec)
        count = 1 if count is None else count
        # A scalable type (elastic Workers) may be scaled up to its maximum at any time.
        count = framework.most_replicas(spec, _canonical(framework, str(rtype)), count)
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


def _canonical(framework: Framework, replica_type: str) -> str:
    """The canonical spelling of a replica type (`worker` → `Worker`): TrainingPolicies see
    jobs before defaulting renames the keys."""
    return {t.lower(): t for t in framework.replica_types}.get(replica_type.lower(), replica_type)
