"""Resource arithmetic of the simulated gang scheduler: what a pod requests, what fits, and
each node's free capacity (`free_by_node`); where a gang goes is `filters.py`.

Quantities are exact `Fraction`s (kubetrain.api.quantity), keyed by resource name; a pod also
takes one `pods` slot, as the kube-scheduler counts it against a node's `allocatable.pods`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubetrain.api.quantity import parse_resource_list

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Resources = dict[str, Fraction]

TERMINAL = ("Succeeded", "Failed")


def resources(values: Mapping[str, Any] | None) -> Resources:
    out, invalid = parse_resource_list(values)
    for name in invalid:
        log.warning("ignoring resource %s=%r: not a quantity", name, (values or {}).get(name))
    return out


def pod_requests(pod: Obj) -> Resources:
    """What the scheduler reserves for a pod: per resource, the containers' summed requests (the
    limit where no request is given), at least any init container's, plus the pod's `overhead`
    and one `pods` slot (component-helpers resource `PodRequests`; sidecar init containers,
    restartPolicy Always, are counted as plain init containers)."""

    def of(container: Obj) -> Resources:
        res = container.get("resources") or {}
        return {**resources(res.get("limits")), **resources(res.get("requests"))}

    spec = pod.get("spec") or {}
    total: Resources = {"pods": Fraction(1)}
    for container in spec.get("containers") or ():
        for name, value in of(container).items():
            total[name] = total.get(name, Fraction(0)) + value
    for container in spec.get("initContainers") or ():
        for name, value in of(container).items():
            total[name] = max(total.get(name, Fraction(0)), value)
    for name, value in resources(spec.get("overhead")).items():
        total[name] = total.get(name, Fraction(0)) + value
    return total


def fits(need: Mapping[str, Fraction], free: Mapping[str, Fraction]) -> bool:
    return all(value <= free.get(name, Fraction(0)) for name, value in need.items() if value > 0)


def take(free: Resources, need: Mapping[str, Fraction]) -> None:
    for name, value in need.items():
        free[name] = free.get(name, Fraction(0)) - value


def add(total: Resources, more: Mapping[str, Fraction]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Fraction(0)) + value


def show(res: Mapping[str, Fraction]) -> str:
    def one(v: Fraction) -> str:
        return str(v.numerator) if v.denominator == 1 else f"{float(v):g}"

    return ", ".join(f"{k}={one(v)}" for k, v in sorted(res.items()))


def free_by_node(
    allocatable: Resources,
    node_names: list[str],
    pods: Iterable[Obj],
    assumed: Mapping[str, tuple[str, Resources]],
) -> dict[str, Resources]:
    """Each node's allocatable minus the requests of unfinished pods bound (or assumed) to it."""
    free = {node: dict(allocatable) for node in node_names}
    counted: set[str] = set()
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        uid = str((pod.get("metadata") or {}).get("uid", ""))
        phase = str((pod.get("status") or {}).get("phase") or "")
        if node in free and phase not in TERMINAL:
            take(free[node], pod_requests(pod))
            counted.add(uid)
    for uid, (node, need) in assumed.items():
        if uid not in counted and node in free:
            take(free[node], need)
    return free
