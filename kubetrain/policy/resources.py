"""What a job asks for: pod counts and resource totals per replica type (pure)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubetrain.api.quantity import QuantityError, parse_quantity
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


def pod_spec(template: dict[str, Any]) -> dict[str, Any]:
    spec = template.get("spec")
    return spec if isinstance(spec, dict) else {}


def containers(template: dict[str, Any], field: str) -> list[tuple[int, dict[str, Any]]]:
    items = pod_spec(template).get(field)
    if not isinstance(items, list):
        return []
    return [(i, c) for i, c in enumerate(items) if isinstance(c, dict)]


def _container_amounts(container: dict[str, Any]) -> dict[str, Fraction]:
    """Per resource name: the request, or the limit when there is no request."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return {}
    out: dict[str, Fraction] = {}
    for source in ("limits", "requests"):  # requests overwrite limits
        values = resources.get(source)
        if not isinstance(values, dict):
            continue
        for name, raw in values.items():
            try:
                out[str(name)] = parse_quantity(raw)
            except QuantityError:
                continue  # the job validation rejects invalid quantities
    return out


def _add(into: dict[str, Fraction], other: dict[str, Fraction]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, Fraction(0)) + amount


def pod_amounts(template: dict[str, Any]) -> dict[str, Fraction]:
    """The effective resources of one pod, as the scheduler computes them.

    Sum over `containers`, plus restartable init containers (sidecars, `restartPolicy:
    Always`, which keep running); a regular init container runs alone (with the sidecars
    started before it), so the pod needs the maximum of the two (Kubernetes `PodRequests`).
    """
    total: dict[str, Fraction] = {}
    for _, container in containers(template, "containers"):
        _add(total, _container_amounts(container))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for _, container in containers(template, "initContainers"):
        amounts = _container_amounts(container)
        if container.get("restartPolicy") == "Always":
            _add(total, amounts)
            _add(sidecars, amounts)
            running = dict(sidecars)
        else:
            running = dict(amounts)
            _add(running, sidecars)
        for name, amount in running.items():
            init_peak[name] = max(init_peak.get(name, Fraction(0)), amount)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, Fraction(0)), amount)
    return total
