"""Job status per docs/behaviour.md §5: conditions, replica statuses, times — pure helpers.

Conditions are `{type, status, reason, message, lastUpdateTime, lastTransitionTime}`.
A condition is only touched when its status, reason or message changes (so an unchanged
reconcile produces an identical status and no write): `lastUpdateTime` moves then, and
`lastTransitionTime` only when `status` flips. Running and Restarting replace each other:
setting one True sets the other False. A terminal condition (Succeeded/Failed) sets Running
(and Restarting) False, and once a job is terminal its conditions never change again.

Status writes are kept to a handful per job (at most 4 over a clean life): a change of the
per-type pod counts alone (`active`, `pending`, `succeeded`, `failed`) does not make a write;
the counts are refreshed with every write that happens for another reason (a condition,
`restarts`, `startTime`, `completionTime`, `observedGeneration`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubetrain.api.metatime import parse_time as parse_time  # the planner reads it as st.parse_time
from kubetrain.frameworks import jobreasons

CREATED = "Created"
RUNNING = "Running"
RESTARTING = "Restarting"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
SUSPENDED = "Suspended"
TERMINAL = (SUCCEEDED, FAILED)

# kubetrain's reasons; the job's API group may write them otherwise (frameworks/jobreasons.py).
REASON_CREATED = jobreasons.CREATED
REASON_RUNNING = jobreasons.RUNNING
REASON_RESTARTING = jobreasons.RESTARTING
REASON_SUCCEEDED = jobreasons.SUCCEEDED
REASON_FAILED = jobreasons.FAILED
REASON_PERMANENT_EXIT_CODE = jobreasons.PERMANENT_EXIT_CODE
REASON_BACKOFF_LIMIT = jobreasons.BACKOFF_LIMIT
REASON_DEADLINE = jobreasons.DEADLINE
REASON_SUSPENDED = jobreasons.SUSPENDED
REASON_RESUMED = jobreasons.RESUMED
REASON_GANG = "GangScheduling"
REASON_INVALID_SPEC = "InvalidSpec"
REASON_SERVICE_CONFLICT = "ServiceConflict"
REASON_RESOURCE_EXISTS = "ErrResourceExists"  # an extra child's name is taken (mpi-operator's reason)
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"  # Failed by a FailJob rule (batch/v1's reason)
REASON_RESTART_JOB = "RestartJob"  # Restarting: every pod recreated by a RestartJob rule
REASON_FAILED_CREATE_POD = "FailedCreatePod"  # the API server refused a pod (quota, admission)
REASON_POD_NAME_CONFLICT = "PodNameConflict"  # a pod the job does not own holds a pod's name
REASON_UNVERIFIED_STATUS = "UnverifiedStatus"  # a terminal status the operator did not write
CREATE_FAILURE_REASONS = (REASON_FAILED_CREATE_POD, REASON_POD_NAME_CONFLICT)

COUNT_FIELDS = ("active", "pending", "succeeded", "failed")


def format_time(t: datetime) -> str:
    """RFC 3339 with second precision, as metav1.Time is serialised."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get_condition(status: Mapping[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == ctype:
            return cond
    return None


def is_true(status: Mapping[str, Any], ctype: str) -> bool:
    cond = get_condition(status, ctype)
    return cond is not None and cond.get("status") == "True"


def terminal_condition(status: dict[str, Any]) -> str | None:
    for ctype in TERMINAL:
        if is_true(status, ctype):
            return ctype
    return None


def finished_since(status: dict[str, Any]) -> datetime | None:
    """When the true Succeeded/Failed condition last changed (a status without `completionTime`)."""
    ctype = terminal_condition(status)
    cond = get_condition(status, ctype) if ctype is not None else None
    return parse_time(cond.get("lastTransitionTime")) if cond is not None else None


def set_condition(
    status: dict[str, Any], ctype: str, value: bool, reason: str, message: str, now: datetime
) -> bool:
    """Set one condition in `status` (mutated); True when something changed.

    A condition that does not exist yet is not created just to say False.
    """
    conditions = status.setdefault("conditions", [])
    cond = get_condition(status, ctype)
    new_status = "True" if value else "False"
    if cond is None:
        if not value:
            return False
        stamp = format_time(now)
        conditions.append(
            {
                "type": ctype,
                "status": new_status,
                "reason": reason,
                "message": message,
                "lastUpdateTime": stamp,
                "lastTransitionTime": stamp,
            }
        )
        return True
    if cond.get("status") == new_status and cond.get("reason") == reason and cond.get("message") == message:
        return False
    stamp = format_time(now)
    flipped = cond.get("status") != new_status
    if flipped:
        cond["lastTransitionTime"] = stamp
    cond.update({"status": new_status, "reason": reason, "message": message, "lastUpdateTime": stamp})
    if flipped:
        _place(conditions, cond)
    return True


def _place(conditions: list[Any], cond: dict[str, Any]) -> None:
    """Keep the `State` printer column (`.status.conditions[-1:].type`) on the latest condition
    that became True: one turning True moves to the end, one that is not True moves in front
    of every True one (so the list is: not-True conditions, then True ones by transition)."""
    conditions[:] = [c for c in conditions if c is not cond]
    if cond.get("status") == "True":
        conditions.append(cond)
        return
    first_true = next(
        (i for i, c in enumerate(conditions) if isinstance(c, dict) and c.get("status") == "True"),
        len(conditions),
    )
    conditions.insert(first_true, cond)


def set_running(status: dict[str, Any], reason: str, message: str, now: datetime) -> bool:
    changed = set_condition(status, RUNNING, True, reason, message, now)
    if is_true(status, RESTARTING):
        changed |= set_condition(status, RESTARTING, False, reason, message, now)
    return changed


def set_restarting(
    status: dict[str, Any], message: str, now: datetime, reason: str = REASON_RESTARTING
) -> bool:
    changed = set_condition(status, RESTARTING, True, reason, message, now)
    if is_true(status, RUNNING):
        changed |= set_condition(status, RUNNING, False, reason, message, now)
    return changed


def set_not_running(status: dict[str, Any], reason: str, message: str, now: datetime) -> bool:
    """Running=False (created if missing: it says why the job is not running yet)."""
    cond = get_condition(status, RUNNING)
    if cond is None:
        status.setdefault("conditions", [])
        stamp = format_time(now)
        _place(
            status["conditions"],
            {
                "type": RUNNING,
                "status": "False",
                "reason": reason,
                "message": message,
                "lastUpdateTime": stamp,
                "lastTransitionTime": stamp,
            },
        )
        return True
    return set_condition(status, RUNNING, False, reason, message, now)


def set_terminal(status: dict[str, Any], ctype: str, reason: str, message: str, now: datetime) -> bool:
    """Succeeded/Failed=True, Running and Restarting False, completionTime set."""
    changed = set_condition(status, ctype, True, reason, message, now)
    for other in (RUNNING, RESTARTING):
        if is_true(status, other):
            changed |= set_condition(status, other, False, reason, message, now)
    if not status.get("completionTime"):
        status["completionTime"] = format_time(now)
        changed = True
    return changed


def without_counts(status: dict[str, Any]) -> dict[str, Any]:
    """The status with the per-type pod counts left out (what decides whether to write)."""
    out = dict(status)
    out.pop("active", None)
    replicas = status.get("replicaStatuses")
    if isinstance(replicas, dict):
        out["replicaStatuses"] = {
            t: {k: v for k, v in (rs or {}).items() if k not in COUNT_FIELDS} if isinstance(rs, dict) else rs
            for t, rs in replicas.items()
        }
    return out


def status_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return without_counts(old) != without_counts(new)
