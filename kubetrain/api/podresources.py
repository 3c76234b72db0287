"""What a pod asks the scheduler for, and how many pods a replica map asks for — one home each.

`pod_amounts` is the Kubernetes `PodRequests` rule: the sum over containers, plus restartable
init containers (sidecars, `restartPolicy: Always`, which keep running); a regular init
container runs alone (with the sidecars started before it), so the pod needs the maximum of the
two. Each container counts its request, else its limit (what the scheduler reserves). PodGroup
`minResources` and TrainingPolicy totals both use it, so a gang is never smaller than what the
scheduler reserves for its pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubetrain.api.quantity import QuantityError, format_sum, parse_quantity_suffix


def replica_count(rspec: Any) -> int | None:
    """`replicas` of one replica spec (absent → 1); None when it is not an integer."""
    replicas = rspec.get("replicas", 1) if isinstance(rspec, Mapping) else None
    if replicas is None and isinstance(rspec, Mapping):
        return 1
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        return None
    return replicas


def replica_counts(replica_map: Any) -> dict[Any, int] | None:
    """`replicas` of every replica spec by its key, in order (None when the map is not a mapping
    or some count is not an integer)."""
    if not isinstance(replica_map, Mapping):
        return None
    counts: dict[Any, int] = {}
    for rtype, rspec in replica_map.items():
        count = replica_count(rspec)
        if count is None:
            return None
        counts[rtype] = count
    return counts


def total_replicas(replica_map: Any) -> int | None:
    """Sum of `replicas` over the replica map (None when some count is not an integer)."""
    if not isinstance(replica_map, Mapping):
        return None
    total = 0
    for rspec in replica_map.values():
        count = replica_count(rspec)
        if count is None:
            return None
        total += count
    return total


def pod_containers(template: Mapping[str, Any], field: str) -> list[tuple[int, dict[str, Any]]]:
    """(index, container) of `template.spec.<field>` ("containers", "initContainers")."""
    spec = template.get("spec")
    items = spec.get(field) if isinstance(spec, Mapping) else None
    if not isinstance(items, list):
        return []
    return [(i, c) for i, c in enumerate(items) if isinstance(c, dict)]


# name -> (amount, the suffix the first term was written with)
_Amounts = dict[str, tuple[Fraction, str]]


def _container_amounts(container: Mapping[str, Any]) -> _Amounts:
    """Per resource name: the request, or the limit when there is no request."""
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    out: _Amounts = {}
    for source in ("limits", "requests"):  # requests overwrite limits
        values = resources.get(source)
        if not isinstance(values, Mapping):
            continue
        for name, raw in values.items():
            try:
                out[str(name)] = parse_quantity_suffix(raw)
            except QuantityError:
                continue  # the job validation rejects invalid quantities
    return out


def _add(into: _Amounts, other: _Amounts) -> None:
    for name, (amount, suffix) in other.items():
        have, first = into.get(name, (Fraction(0), suffix))
        into[name] = (have + amount, first)


def _pod_amounts_with_suffix(template: Mapping[str, Any]) -> _Amounts:
    total: _Amounts = {}
    for _, container in pod_containers(template, "containers"):
        _add(total, _container_amounts(container))
    sidecars: _Amounts = {}
    init_peak: _Amounts = {}
    for _, container in pod_containers(template, "initContainers"):
        amounts = _container_amounts(container)
        if container.get("restartPolicy") == "Always":
            _add(total, amounts)
            _add(sidecars, amounts)
            running = dict(sidecars)
        else:
            running = dict(amounts)
            _add(running, sidecars)
        for name, (amount, suffix) in running.items():
            peak, first = init_peak.get(name, (Fraction(0), suffix))
            init_peak[name] = (max(peak, amount), first)
    for name, (amount, suffix) in init_peak.items():
        have, first = total.get(name, (Fraction(0), suffix))
        total[name] = (max(have, amount), first)
    return total


def pod_amounts(template: Mapping[str, Any]) -> dict[str, Fraction]:
    """The effective resources of one pod of `template`, as the scheduler computes them."""
    return {name: amount for name, (amount, _) in _pod_amounts_with_suffix(template).items()}


def sum_pods_resources(counted: Iterable[tuple[Mapping[str, Any], int]]) -> dict[str, str]:
    """The effective resources of `count` pods per template, summed and printed as quantities
    (names sorted; each sum written in the suffix of its first term when that is exact: "8Gi",
    "1500m"). Each template's pod is read once: a 1,000-pod gang of two templates costs two
    reads, not 1,000."""
    totals: _Amounts = {}
    for template, count in counted:
        amounts = _pod_amounts_with_suffix(template)
        _add(totals, {name: (amount * count, suffix) for name, (amount, suffix) in amounts.items()})
    return {name: format_sum(totals[name][0], totals[name][1]) for name in sorted(totals)}
