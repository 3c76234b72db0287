"""Keeping a job's PodGroup in step with its `schedulingPolicy` (docs/behaviour.md §8): the
PodGroup kubetrain created is written again when the spec the job now asks for differs in a
field kubetrain sets — as mpi-operator updates the PodGroup of a running MPIJob whose
`minAvailable`, `scheduleTimeoutSeconds` or `priorityClass` changed. Pure.

Only the fields kubetrain writes are compared, each as its API means it: `minResources`
quantity by quantity (`8Gi` and `8589934592` are equal: a scheduler's own normalisation is no
change). A field kubetrain does not set is left to whoever set it (Volcano's webhook gives a
PodGroup without a queue the queue `default`), and one the job stops asking for (an unset
`scheduleTimeoutSeconds`) keeps its last value."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubetrain.api.quantity import parse_quantity

# The spec fields of a PodGroup kubetrain writes (jobchildren.build_pod_group), in either API.
SYNCED_FIELDS = ("minMember", "minResources", "queue", "priorityClassName", "scheduleTimeoutSeconds")


def _quantities(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        return None
    out: dict[str, Any] = {}
    for name, quantity in value.items():
        try:
            out[str(name)] = parse_quantity(quantity)
        except (ValueError, TypeError):
            out[str(name)] = quantity
    return out


def _same(field: str, wanted: Any, current: Any) -> bool:
    if field == "minResources":
        return _quantities(wanted) == _quantities(current)
    return bool(wanted == current)


def pod_group_update(desired: Mapping[str, Any], observed: Mapping[str, Any]) -> dict[str, Any] | None:
    """The observed PodGroup with the fields of `desired`'s spec that differ written in (its
    resourceVersion kept, so a concurrent write answers 409 and is looked at again), or None
    when none differs. A field the desired PodGroup does not have is left as it is (a scheduler
    may have defaulted it: writing it away would start a write loop with its webhook)."""
    wanted = desired.get("spec") or {}
    current = observed.get("spec") or {}
    if not isinstance(wanted, Mapping) or not isinstance(current, Mapping):
        return None
    changed = {f: wanted[f] for f in SYNCED_FIELDS if f in wanted and not _same(f, wanted[f], current.get(f))}
    if not changed:
        return None
    update = copy.deepcopy(dict(observed))
    update["spec"] = {**current, **copy.deepcopy(changed)}
    return update
