"""Setting one pod condition, as every writer of one in kube-apiserver and kube-controller-manager
does it — pure. Devcluster's four writers call it: the Eviction API's and the taint manager's and
pod GC's `DisruptionTarget=True`, the binding's `PodScheduled=True`.

`update_pod_condition` follows `UpdatePodCondition` (k8s.io/kubernetes pkg/api/v1/pod/util.go,
and its twin for the internal types in pkg/api/pod/util.go that the registry uses):

- the condition gets lastTransitionTime now; a condition of the type already there whose status
  stays keeps its lastTransitionTime (also when it had none);
- the first condition of the type is replaced whole (reason, message and observedGeneration the
  new one's, or none), or the condition is appended when there is none of the type;
- it reports a change only when status, reason, message, lastProbeTime or lastTransitionTime
  differ (upstream's `isEqual` does not look at observedGeneration).

The condition is written as Go serializes a `v1.PodCondition`: observedGeneration, reason and
message left out when zero or empty (`omitempty`), lastProbeTime and lastTransitionTime null
when unset (a zero `metav1.Time` is `null`).

Which writers stamp observedGeneration (KEP-5067, PodObservedGenerationTracking GA and locked on
since 1.35) is `condition_observed_generation`'s docstring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.metatime import parse_time

_COMPARED_TEXT = ("status", "reason", "message")
_COMPARED_TIMES = ("lastProbeTime", "lastTransitionTime")
_ORDER = ("type", "observedGeneration", "status", "lastProbeTime", "lastTransitionTime", "reason", "message")


def condition_observed_generation(generation: Any) -> int:
    """`CalculatePodConditionObservedGeneration` (pkg/api/v1/pod/util.go) with the
    PodObservedGenerationTracking gate locked on: the pod's `metadata.generation` (0, so left
    out, for a pod without one). Upstream 1.36 stamps it on the taint manager's DisruptionTarget
    (`addConditionAndDeletePod`, taint_eviction.go) and pod GC's (`gcOrphaned`,
    gc_controller.go); the Eviction API's (`addConditionAndDeletePod`, eviction.go) and the
    binding's PodScheduled (`setPodNodeAndMetadata`, storage.go) set none."""
    if isinstance(generation, int) and not isinstance(generation, bool) and generation > 0:
        return generation
    return 0


def status_observed_generation(generation: Any) -> int:
    """`CalculatePodStatusObservedGeneration` with the gate locked on: the pod's generation, the
    `status.observedGeneration` pod GC writes with phase Failed (`markFailedAndDeletePodWithCondition`)."""
    return condition_observed_generation(generation)


def pod_condition(
    type_: str,
    status: str,
    *,
    reason: str = "",
    message: str = "",
    observed_generation: int = 0,
    last_probe_time: str | None = None,
) -> dict[str, Any]:
    """A `v1.PodCondition` as Go serializes it, without its lastTransitionTime (which
    `update_pod_condition` sets)."""
    condition: dict[str, Any] = {"type": type_}
    if observed_generation:
        condition["observedGeneration"] = observed_generation
    condition["status"] = status
    condition["lastProbeTime"] = last_probe_time
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def disruption_target(reason: str, message: str, generation: int = 0) -> dict[str, Any]:
    """The `DisruptionTarget=True` condition a controller sets on a pod before deleting it (the
    taint manager's `addConditionAndDeletePod`, the pod GC's `gcOrphaned`), its
    observedGeneration the pod's generation (`CalculatePodConditionObservedGeneration`)."""
    return pod_condition(
        "DisruptionTarget",
        "True",
        reason=reason,
        message=message,
        observed_generation=condition_observed_generation(generation),
    )


def update_pod_condition(
    status: Mapping[str, Any] | None, condition: Mapping[str, Any], now: str
) -> tuple[dict[str, Any], bool]:
    """`UpdatePodCondition`: (a copy of `status` with `condition` set, whether that changed it).
    `now` is the RFC 3339 time a new or transitioning condition gets; `status` is not changed."""
    new_status = dict(status or {})
    conditions = [dict(c) if isinstance(c, Mapping) else c for c in new_status.get("conditions") or []]
    new_status["conditions"] = conditions
    wanted = {**condition, "lastTransitionTime": now}
    index = next(
        (i for i, c in enumerate(conditions) if isinstance(c, dict) and c.get("type") == wanted.get("type")),
        None,
    )
    if index is None:
        conditions.append(_ordered(wanted))
        return new_status, True
    old = conditions[index]
    if _text(old, "status") == _text(wanted, "status"):
        wanted["lastTransitionTime"] = old.get("lastTransitionTime") or None
    equal = all(_text(old, k) == _text(wanted, k) for k in _COMPARED_TEXT) and all(
        _time(old, k) == _time(wanted, k) for k in _COMPARED_TIMES
    )
    conditions[index] = _ordered(wanted)
    return new_status, not equal


def _ordered(condition: Mapping[str, Any]) -> dict[str, Any]:
    """The condition's fields in `v1.PodCondition`'s order, as Go writes them."""
    out = {k: condition[k] for k in _ORDER if k in condition}
    out.update((k, v) for k, v in condition.items() if k not in out)
    return out


def _text(condition: Mapping[str, Any], key: str) -> str:
    """A string field; absent or null is Go's empty string."""
    return str(condition.get(key) or "")


def _time(condition: Mapping[str, Any], key: str) -> object:
    """A time field for `metav1.Time.Equal`: absent, null and empty are the zero time."""
    raw = condition.get(key)
    if not raw:
        return None
    return parse_time(raw) or raw
