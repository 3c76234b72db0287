"""Failures and restarts (docs/behaviour.md §6): what a failed pod means, and how restarts are counted.

Verdict on a pod in phase Failed, by the replica type's restartPolicy:
- Never: the job fails (`JobFailed`).
- OnFailure / Always: the kubelet already restarts containers in place; a pod that still
  reaches Failed (eviction, node loss) is deleted and recreated under the same name.
- ExitCode: disruptions (reason Evicted/Preempted/NodeLost/…, or a `DisruptionTarget=True`
  condition) and exit codes 128-255 of the framework container (signals: 130, 137, 143) are
  retryable; 1-127 are permanent (`PermanentExitCode`). A pod that failed with no exit code of
  the framework container (it never ran, e.g. an admission error on the node) or with 0 (another
  container failed) is retried: that is not the training code's verdict.

Counting (backoffLimit counts every restart: recreations AND in-place container restarts):
the restarts of a pod *slot* (type, index) are `prior + restartCount`, where `restartCount` is
the framework container's in-place restart count of the pod that exists now and `prior`
(annotation `kubetrain.io/prior-restarts` stamped on pods the operator recreates) is what the
slot accumulated before that pod existed. So the count is derived from observed pods and nothing
is counted twice across reconciles. `status.replicaStatuses[type].restarts` persists the type's
total; when a slot's pod is gone (deleted for recreation, deleted by a user, suspended), the
part of the persisted total no present pod explains is handed to the next pod created for that
type, so an operator restart or a pod deletion forgets nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.labels import ANNOTATION_PRIOR_RESTARTS

RETRY = "retry"
FAIL = "fail"
DISRUPTION_REASONS = frozenset(
    {"Evicted", "Preempted", "NodeLost", "NodeShutdown", "Shutdown", "Terminated", "DeadlineExceededByNode"}
)


@dataclass(frozen=True, slots=True)
class Verdict:
    action: str  # RETRY | FAIL
    reason: str  # condition reason when FAIL: JobFailed | PermanentExitCode
    detail: str  # "container pytorch exited with code 137", "evicted: …"


def container_status(pod: Mapping[str, Any], container_name: str) -> Mapping[str, Any] | None:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for cs in statuses:
        if isinstance(cs, Mapping) and cs.get("name") == container_name:
            return cs
    return None


def restart_count(pod: Mapping[str, Any], container_name: str) -> int:
    cs = container_status(pod, container_name)
    value = cs.get("restartCount") if cs else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def prior_restarts(pod: Mapping[str, Any]) -> int:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_PRIOR_RESTARTS)
    try:
        value = int(raw) if raw is not None else 0
    except (TypeError, ValueError):
        return 0
    return max(value, 0)


def slot_restarts(pod: Mapping[str, Any], container_name: str) -> int:
    return prior_restarts(pod) + restart_count(pod, container_name)


def exit_code(pod: Mapping[str, Any], container_name: str) -> int | None:
    """Exit code of the framework container's last termination (None if it never terminated)."""
    cs = container_status(pod, container_name)
    if not cs:
        return None
    for key in ("state", "lastState"):
        terminated = (cs.get(key) or {}).get("terminated")
        if isinstance(terminated, Mapping) and isinstance(terminated.get("exitCode"), int):
            code: int = terminated["exitCode"]
            return code
    return None


def disruption(pod: Mapping[str, Any]) -> str | None:
    """Why the pod was disrupted (eviction, preemption, node loss), or None."""
    status = pod.get("status") or {}
    reason = status.get("reason")
    if reason in DISRUPTION_REASONS:
        return f"{reason}: {status.get('message') or 'disrupted'}".rstrip()
    for cond in status.get("conditions") or []:
        if (
            isinstance(cond, Mapping)
            and cond.get("type") == "DisruptionTarget"
            and cond.get("status") == "True"
        ):
            return f"DisruptionTarget ({cond.get('reason') or 'disrupted'})"
    return None


def classify_failed_pod(pod: Mapping[str, Any], restart_policy: str, container_name: str) -> Verdict:
    """What a pod in phase Failed means for the job (see the module docstring)."""
    name = (pod.get("metadata") or {}).get("name", "?")
    disrupted = disruption(pod)
    code = exit_code(pod, container_name)
    if disrupted:
        detail = f"pod {name} was disrupted ({disrupted})"
    elif code is not None:
        detail = f"pod {name}: container {container_name} exited with code {code}"
    else:
        detail = f"pod {name} failed ({(pod.get('status') or {}).get('reason') or 'no exit code'})"
    if restart_policy == "Never":
        return Verdict(FAIL, "JobFailed", detail)
    if restart_policy in ("OnFailure", "Always"):
        return Verdict(RETRY, "", detail)
    # ExitCode
    if disrupted or code is None or code == 0 or 128 <= code <= 255:
        return Verdict(RETRY, "", detail + (" (retryable)" if code and code >= 128 else ""))
    return Verdict(
        FAIL,
        "PermanentExitCode",
        f"{detail}: exit codes 1-127 are permanent under restartPolicy ExitCode",
    )


@dataclass(slots=True)
class TypeRestarts:
    """Restart accounting of one replica type for one reconcile."""

    persisted: int  # status.replicaStatuses[type].restarts as last written
    counted: int  # sum over present pods of prior + restartCount
    recreations: int = 0  # pods deleted this reconcile to be recreated

    @property
    def base(self) -> int:
        """Restarts that already happened (never less than what was persisted)."""
        return max(self.persisted, self.counted)

    @property
    def unattributed(self) -> int:
        """Restarts of slots that have no pod now: handed to the next pod created."""
        return self.base - self.counted

    @property
    def total(self) -> int:
        return self.base + self.recreations

    @property
    def in_place(self) -> int:
        """Restarts seen this reconcile that the persisted count did not know about."""
        return max(0, self.counted - self.persisted)
