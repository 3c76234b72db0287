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

Counting (backoffLimit counts every restart: recreations AND in-place container restarts) uses
only what the operator recorded and what the kubelet reports, never what a pod's own metadata
says (anyone who may create or edit pods could write that):
- `status.replicaStatuses[type].restarts` — the type's total, as the operator last wrote it;
- `status.replicaStatuses[type].priorRestarts` — the part of that total the type's pods then
  present did not explain by their framework container's `restartCount` (recreations, and
  in-place restarts of pods that are gone);
- the `restartCount` of the framework container of each pod that fills a slot now (written by
  the kubelet through pods/status).
Restarts now = max(restarts, priorRestarts + Σ restartCount); a pod that left takes its
restartCount with it, which the recorded total keeps. With no `priorRestarts` recorded (a
status written before it existed) the present pods are taken to be counted already.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
    """Restart accounting of one replica type for one reconcile (see the module docstring)."""

    persisted: int  # status.replicaStatuses[type].restarts as last written
    prior: int  # status.replicaStatuses[type].priorRestarts as last written
    present: int  # Σ restartCount of the framework container over the pods filling slots now
    recreations: int = 0  # pods deleted this reconcile to be recreated

    @classmethod
    def recorded(cls, replica_status: Any, present: int) -> TypeRestarts:
        """From the type's recorded replica status and the present pods' restart counts."""
        status = replica_status if isinstance(replica_status, Mapping) else {}
        persisted = _count(status.get("restarts"))
        prior = status.get("priorRestarts")
        if not isinstance(prior, int) or isinstance(prior, bool) or prior < 0:
            prior = max(0, persisted - present)  # recorded before priorRestarts existed
        return cls(persisted, prior, present)

    @property
    def counted(self) -> int:
        return self.prior + self.present

    @property
    def base(self) -> int:
        """Restarts that already happened (never less than what was recorded)."""
        return max(self.persisted, self.counted)

    @property
    def total(self) -> int:
        return self.base + self.recreations

    @property
    def prior_after(self) -> int:
        """`priorRestarts` to record: the total the present pods do not explain (a pod deleted
        now is still present until it is gone; its restartCount leaves with it)."""
        return self.total - self.present

    @property
    def in_place(self) -> int:
        """Restarts seen this reconcile that the recorded count did not know about."""
        return max(0, self.counted - self.persisted)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
