"""When a batch Job of a per-group shape failed, read from its pods — pure.

JobSet orders failed Jobs by their `Failed` condition's time (`kubetrain.jobs.failureorder`);
the Job controller sets it once it sees the failure that takes the Job past its backoff limit.
kubetrain's Jobs are its own bookkeeping over pods, so a Job's failure time is that of the
latest failure among the pods that failed it in this reconcile: a Failed pod's, the latest
`state.terminated.finishedAt` of its containers (init containers too), else its `Ready`
condition's `lastTransitionTime`; a container restart's (restartPolicy OnFailure), its
`lastState.terminated.finishedAt`. None when the pods tell no time (the planner then takes the
reconcile's own time, when it saw the failure).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.metatime import parse_time


def _statuses(pod: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    status = pod.get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            if isinstance(cs, Mapping):
                yield cs


def _finished(cs: Mapping[str, Any], state: str) -> datetime | None:
    terminated = (cs.get(state) or {}).get("terminated") if isinstance(cs.get(state), Mapping) else None
    return parse_time(terminated.get("finishedAt")) if isinstance(terminated, Mapping) else None


def latest(times: Iterable[datetime | None]) -> datetime | None:
    """The latest of the known times; None when none is known."""
    known = [t for t in times if t is not None]
    return max(known) if known else None


def pod_failed_at(pod: Mapping[str, Any]) -> datetime | None:
    """When a Failed pod failed."""
    ended = latest(_finished(cs, "state") for cs in _statuses(pod))
    if ended is not None:
        return ended
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return parse_time(cond.get("lastTransitionTime"))
    return None


def last_restart_at(pod: Mapping[str, Any]) -> datetime | None:
    """When a live pod's latest container restart happened (its container ended)."""
    return latest(_finished(cs, "lastState") for cs in _statuses(pod))
