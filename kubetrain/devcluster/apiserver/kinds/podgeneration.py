"""A pod's generation and observedGeneration, as kube-apiserver 1.35+ keeps them (KEP-5067 "Pod
Generation", GA: the PodObservedGenerationTracking gate is locked on).

Where each rule lives in devcluster, with the upstream function it follows:

- create: `metadata.generation` is 1 (podStrategy.PrepareForCreate; `meta.prepare_create`);
- update of the pod: it grows by one when the spec changes, whatever else changes
  (`updatePodGeneration`, pkg/registry/core/pod/strategy.go: `Semantic.DeepEqual` of the specs;
  `meta.bump_generation`, for which everything of a pod outside metadata and status is its spec);
  devcluster serves no `ephemeralcontainers` or `resize` subresource, whose strategies bump it the
  same way;
- first graceful deletion: it grows by one as deletionTimestamp is set; shortening the grace
  period of a pod already being deleted does not (k8s.io/apiserver `rest.BeforeDelete`;
  `verbs/deletion.py`);
- the binding: never (`BindingREST.setPodNodeAndMetadata` writes storage directly, around the
  strategy), and its `PodScheduled=True` condition carries no observedGeneration
  (`podutil.UpdatePodCondition` replaces the condition whole; `verbs/subresources.py`);
- a status write: never; and `preserve_observed_generation` below.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj


def _unset(value: Any) -> bool:
    """A Go int64 left at zero: absent, null or 0 in the JSON body."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0)


def preserve_observed_generation(new: Obj, old: Obj) -> None:
    """A pods/status write that leaves `status.observedGeneration`, or a condition's
    `observedGeneration`, out (or 0) keeps the stored value (podStatusStrategy.PrepareForUpdate →
    `preserveOldObservedGeneration`, pkg/registry/core/pod/strategy.go).

    Conditions are matched by type and, as upstream keeps a list per type (validation permits
    several conditions of one type), by their order within that type: the n-th new condition of a
    type takes the n-th old one's value. Every new condition of the type uses up one old entry,
    whether it needed the value or not. An explicit 0 with no stored value to keep is dropped, as
    an int64 zero with `omitempty` is not serialized."""
    status, old_status = new.get("status"), old.get("status")
    if not isinstance(status, dict):
        return
    if not isinstance(old_status, dict):
        old_status = {}
    _keep(status, old_status.get("observedGeneration"))
    remembered: dict[Any, list[Any]] = {}
    for condition in old_status.get("conditions") or ():
        if isinstance(condition, dict):
            remembered.setdefault(condition.get("type"), []).append(condition.get("observedGeneration"))
    for condition in status.get("conditions") or ():
        if not isinstance(condition, dict):
            continue
        queue = remembered.get(condition.get("type"))
        previous = queue.pop(0) if queue else None
        _keep(condition, previous)


def _keep(new: dict[str, Any], previous: Any) -> None:
    """`new`'s observedGeneration, or `previous` when it has none; an int64 zero is not
    serialized (`omitempty`), so a 0 with nothing to keep goes away."""
    if not _unset(new.get("observedGeneration")):
        return
    if _unset(previous):
        new.pop("observedGeneration", None)
    else:
        new["observedGeneration"] = previous
