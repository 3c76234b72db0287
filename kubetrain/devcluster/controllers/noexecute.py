"""The decisions of kube-controller-manager's taint-eviction controller (pkg/controller/
tainteviction taint_eviction.go) — pure: which pods on a node with NoExecute taints are deleted,
and when. `taintevict.py` watches, keeps the timers and writes.

- `no_execute_taints(node)`: `getNoExecuteTaints`, the node's taints with effect NoExecute (the
  only ones this controller looks at; NoSchedule and PreferNoSchedule are the scheduler's).
- `matching_tolerations(taints, tolerations)`: core/v1 helper `GetMatchingTolerations`, for each
  taint the first toleration that tolerates it (`ToleratesTaint`, kubelet/taints.py), or None
  when some taint is tolerated by none.
- `min_toleration_seconds(used)`: `getMinTolerationTime`, the smallest `tolerationSeconds` of the
  tolerations used (one of 0 or less: 0, at once), None when none of them has one (forever).
- `plan(work, taints, tolerations, now)`: `processPodOnNode` over the pod's pending eviction: no
  taints or tolerated forever cancels it; an untolerated taint cancels it and evicts at once;
  otherwise it is kept when it was planned before `now` (upstream keeps the first plan, so a
  taint added later never postpones an eviction), else (re)planned for creation +
  min(tolerationSeconds). A pending eviction that was cancelled gets a `Cancelling deletion` event
  (`cancelWorkWithEvent`).
- `disruption_condition` / `add_condition`: the pod condition upstream patches to status before
  the DELETE (`addConditionAndDeletePod` with `UpdatePodCondition`, kinds/podconditions.py),
  stamped with the pod's generation; nothing is patched when only that differs (upstream's
  `isEqual` does not compare observedGeneration).
- `eviction_event`: the core/v1 Events it records (`emitPodDeletionEvent`,
  `emitCancelPodDeletionEvent`: involvedObject without uid, reason TaintManagerEviction).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.apiserver.kinds import podconditions
from kubetrain.devcluster.kubelet.taints import tolerates

CONTROLLER_NAME = "taint-eviction-controller"
EVENT_REASON = "TaintManagerEviction"
DISRUPTION_REASON = "DeletionByTaintManager"
DISRUPTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"


@dataclass(frozen=True, slots=True)
class Work:
    """A planned eviction: planned at `created`, due at `fire_at` (monotonic seconds)."""

    created: float
    fire_at: float


@dataclass(frozen=True, slots=True)
class Plan:
    cancel: bool  # the pending eviction (if any) is cancelled
    work: Work | None  # the eviction planned now (None: nothing new)


def _dicts(items: Any) -> list[Mapping[str, Any]]:
    return [i for i in items or () if isinstance(i, Mapping)]


def no_execute_taints(node: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    taints = _dicts(((node or {}).get("spec") or {}).get("taints"))
    return [t for t in taints if t.get("effect") == "NoExecute"]


def matching_tolerations(
    taints: Iterable[Mapping[str, Any]], tolerations: Any
) -> list[Mapping[str, Any]] | None:
    allowed = _dicts(tolerations)
    used: list[Mapping[str, Any]] = []
    for taint in taints:
        match = next((t for t in allowed if tolerates(t, taint)), None)
        if match is None:
            return None
        used.append(match)
    return used


def min_toleration_seconds(used: Sequence[Mapping[str, Any]]) -> int | None:
    if not used:
        return 0
    seconds: list[int] = [t["tolerationSeconds"] for t in used if isinstance(t.get("tolerationSeconds"), int)]
    if not seconds:
        return None
    return max(0, min(seconds))


def plan(work: Work | None, taints: Sequence[Mapping[str, Any]], tolerations: Any, now: float) -> Plan:
    if not taints:
        return Plan(cancel=True, work=None)
    used = matching_tolerations(taints, tolerations)
    if used is None:
        return Plan(cancel=True, work=Work(now, now))
    delay = min_toleration_seconds(used)
    if delay is None:
        return Plan(cancel=True, work=None)
    if work is None:
        return Plan(cancel=False, work=Work(now, now + delay))
    if work.created + delay < now + delay:
        return Plan(cancel=False, work=None)
    return Plan(cancel=True, work=Work(work.created, work.created + delay))


def _stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def disruption_condition(generation: int = 0) -> dict[str, Any]:
    """The taint manager's DisruptionTarget condition (`addConditionAndDeletePod`), its
    observedGeneration the pod's generation (`condition_observed_generation`)."""
    return podconditions.disruption_target(DISRUPTION_REASON, DISRUPTION_MESSAGE, generation)


def add_condition(
    status: Mapping[str, Any] | None, now: datetime, generation: int = 0
) -> list[dict[str, Any]] | None:
    """The pod's conditions with the DisruptionTarget one (`UpdatePodCondition`,
    kinds/podconditions.py), None when upstream's `updated` is false and it patches nothing."""
    new, changed = podconditions.update_pod_condition(status, disruption_condition(generation), _stamp(now))
    return new["conditions"] if changed else None


def eviction_event(namespace: str, name: str, cancelled: bool, now: datetime) -> dict[str, Any]:
    """`Marking for deletion Pod ns/name`, or `Cancelling deletion of Pod ns/name` (Normal)."""
    what = "Cancelling deletion of Pod" if cancelled else "Marking for deletion Pod"
    stamp = _stamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{int(now.timestamp() * 1e9):x}", "namespace": namespace},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name},
        "reason": EVENT_REASON,
        "message": f"{what} {namespace}/{name}",
        "type": "Normal",
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": CONTROLLER_NAME},
        "reportingComponent": CONTROLLER_NAME,
    }
