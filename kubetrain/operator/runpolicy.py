"""Run policy (docs/behaviour.md §7): managedBy, activeDeadlineSeconds, TTL, cleanPodPolicy, on
the job shape's typed `RunPolicy` (kubetrain.jobs.shape).

All times are computed, never polled: the planner returns the exact instant it must be woken
(`Plan.requeue_at`) for a deadline or a TTL, and acts when `now` has reached it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from kubetrain.api.groups import KUBETRAIN_MANAGER, RECONCILED_MANAGERS
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.jobs.shape import RunPolicy

OPERATOR_MANAGER = KUBETRAIN_MANAGER


def run_policy(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    value = spec.get("runPolicy")
    return value if isinstance(value, Mapping) else {}


def is_managed(job: Mapping[str, Any]) -> bool:
    """False when `spec.runPolicy.managedBy` names another controller (e.g. Kueue's MultiKueue):
    leave the job alone. Kubeflow's operator's name counts as kubetrain's, and for an MPIJob
    mpi-operator's too (api/groups.py)."""
    spec = job.get("spec")
    manager = run_policy(spec).get("managedBy") if isinstance(spec, Mapping) else None
    framework = FRAMEWORKS.get(str(job.get("kind")))
    if framework is not None and manager in framework.kubeflow_managers:
        return True
    return manager in (None, "") or manager in RECONCILED_MANAGERS


def deadline(policy: RunPolicy, start_time: datetime | None) -> datetime | None:
    """startTime + activeDeadlineSeconds (None when either is unset)."""
    seconds = policy.active_deadline_seconds
    if seconds is None or start_time is None:
        return None
    return start_time + timedelta(seconds=seconds)


def ttl_expiry(policy: RunPolicy, completion_time: datetime | None) -> datetime | None:
    """completionTime + ttlSecondsAfterFinished (None when unset, or while suspended)."""
    seconds = policy.ttl_seconds_after_finished
    if seconds is None or completion_time is None or policy.suspend:
        return None
    return completion_time + timedelta(seconds=seconds)


def is_active_pod(pod: Mapping[str, Any]) -> bool:
    """Running or Pending (what "Running" cleanup and deadline/backoff failures delete)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in (None, "", "Pending", "Running", "Unknown")


def pods_to_clean(policy: str, pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the pods cleanPodPolicy removes once the job is finished."""
    if policy == "None":
        return []
    return [p["metadata"]["name"] for p in pods if policy == "All" or is_active_pod(p)]


def earliest(*times: datetime | None) -> datetime | None:
    present = [t for t in times if t is not None]
    return min(present) if present else None
