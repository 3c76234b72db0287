"""The disruption controller's decision (kube-controller-manager pkg/controller/disruption
disruption.go): the status a PodDisruptionBudget should have, from its spec and the pods it
selects — pure; `disruption.py` reads the store and writes the status.

For the pods the budget's selector picks in its namespace (`getPodsForPdb`):
- `expectedPods` and `desiredHealthy` (`getExpectedPodCount`): with an integer minAvailable,
  desiredHealthy is that number and expectedPods the number of selected pods; with a percentage
  minAvailable or any maxUnavailable, expectedPods is the sum of the scales of the pods'
  controllers (`getExpectedScale`) and desiredHealthy the percentage of it rounded up
  (`intstr.GetScaledValueFromIntOrPercent`), or expectedPods minus maxUnavailable (never below
  0). A pod without a controller is left out of that sum (upstream then records an
  `UnmanagedPods` Event). devcluster serves no Deployments, ReplicaSets, StatefulSets or
  ReplicationControllers, so a controller's scale is that of a custom resource with a scale
  subresource (`getScaleController`); a controller kind that is not served, or one without a
  scale subresource, or a controller that no longer exists, fails the sync.
- `currentHealthy` (`countHealthyPods`): selected pods that are Ready, not being deleted and not
  in `disruptedPods` (an eviction in flight) for less than 2 minutes (`DeletionTimeout`).
- `disruptedPods` (`buildDisruptedPodMap`): the entries of pods that still exist, are not being
  deleted and were evicted less than 2 minutes ago; the controller looks again when the oldest
  entry expires.
- `disruptionsAllowed` (`updatePdbStatus`): currentHealthy - desiredHealthy, 0 when negative or
  when expectedPods is 0; `observedGeneration` the budget's generation; the `DisruptionAllowed`
  condition (component-helpers `UpdateDisruptionAllowedCondition`) True/SufficientPods when a
  disruption is allowed, else False/InsufficientPods. The status is written only when it changed.
- A failed sync (`failSafe`): disruptionsAllowed 0 and DisruptionAllowed False/SyncFailed with
  the error as message.

Not done: the controller's Events (NoPods, UnmanagedPods, NotDeleted, CalculateExpectedPodCountFailed),
and the stale-DisruptionTarget clean-up of pods never deleted (upstream's second queue).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.pdbs import (
    CONDITION,
    disruption_allowed_condition,
    is_pod_ready,
    set_condition,
)

DELETION_TIMEOUT = timedelta(minutes=2)
SYNC_FAILED = "SyncFailed"

# Scale of the controller an ownerReference names: replicas, None when absent; raises SyncError.
ScaleOf = Callable[[Obj, str], int | None]


class SyncError(Exception):
    """Why a budget's status cannot be computed (its message becomes the SyncFailed condition's)."""


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """apimachinery intstr `GetScaledValueFromIntOrPercent`."""
    if isinstance(value, int):
        return value
    percent = int(str(value).rstrip("%"))
    scaled = percent * total / 100
    return -int(-scaled // 1) if round_up else int(scaled // 1)


def controller_ref(pod: Obj) -> Obj | None:
    """apimachinery `metav1.GetControllerOf`."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def expected_scale(pods: Iterable[Obj], scale_of: ScaleOf) -> int:
    """`getExpectedScale`: the sum of the scales of the pods' controllers (each counted once)."""
    scales: dict[str, int] = {}
    for pod in pods:
        ref = controller_ref(pod)
        if ref is None or ref.get("uid") in scales:
            continue  # an unmanaged pod
        replicas = scale_of(ref, str(pod["metadata"].get("namespace", "")))
        if replicas is None:
            raise SyncError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
        scales[str(ref.get("uid"))] = replicas
    return sum(scales.values())


def expected_and_desired(spec: Obj, pods: list[Obj], scale_of: ScaleOf) -> tuple[int, int]:
    """`getExpectedPodCount`: (expectedPods, desiredHealthy)."""
    if spec.get("maxUnavailable") is not None:
        expected = expected_scale(pods, scale_of)
        return expected, max(expected - scaled_value(spec["maxUnavailable"], expected, True), 0)
    minimum = spec.get("minAvailable")
    if isinstance(minimum, int):
        return len(pods), minimum
    if minimum is not None:
        expected = expected_scale(pods, scale_of)
        return expected, scaled_value(minimum, expected, True)
    return 0, 0


def disrupted_map(pods: list[Obj], status: Obj, now: datetime) -> tuple[dict[str, str], datetime | None]:
    """`buildDisruptedPodMap`: the entries still in flight, and when the oldest of them expires."""
    recorded = status.get("disruptedPods") or {}
    result: dict[str, str] = {}
    recheck: datetime | None = None
    for pod in pods:
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp") or name not in recorded:
            continue
        when = parse_time(recorded[name])
        if when is None or when + DELETION_TIMEOUT < now:
            continue  # expected to be deleted by now, but it was not
        result[name] = recorded[name]
        if recheck is None or when + DELETION_TIMEOUT < recheck:
            recheck = when + DELETION_TIMEOUT
    return result, recheck


def count_healthy(pods: list[Obj], disrupted: dict[str, str], now: datetime) -> int:
    """`countHealthyPods`."""
    healthy = 0
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        when = parse_time(disrupted.get(pod["metadata"]["name"]))
        if when is not None and when + DELETION_TIMEOUT > now:
            continue
        healthy += is_pod_ready(pod)
    return healthy


def new_status(pdb: Obj, pods: list[Obj], scale_of: ScaleOf, now: datetime) -> tuple[Obj, datetime | None]:
    """`trySync` + `updatePdbStatus` (or `failSafe`): the status the budget should have, and when
    to look again (an in-flight eviction expiring)."""
    old = pdb.get("status") or {}
    status = copy.deepcopy(old)
    generation = int(pdb["metadata"].get("generation") or 0)
    try:
        expected, desired = expected_and_desired(pdb.get("spec") or {}, pods, scale_of)
    except SyncError as exc:
        status["disruptionsAllowed"] = 0
        set_condition(
            status,
            {
                "type": CONDITION,
                "status": "False",
                "observedGeneration": int(old.get("observedGeneration") or 0),
                "reason": SYNC_FAILED,
                "message": str(exc),
            },
            now,
        )
        return status, None
    disrupted, recheck = disrupted_map(pods, old, now)
    healthy = count_healthy(pods, disrupted, now)
    allowed = healthy - desired
    status.update(
        currentHealthy=healthy,
        desiredHealthy=desired,
        expectedPods=expected,
        disruptionsAllowed=0 if expected <= 0 or allowed <= 0 else allowed,
        observedGeneration=generation,
    )
    if disrupted:
        status["disruptedPods"] = disrupted
    else:
        status.pop("disruptedPods", None)
    disruption_allowed_condition(status, now)
    return status, recheck
