"""Pod status when app containers exit and the kubelet restarts them in place. Pure.

`crashed_status` covers containers that exited under restartPolicy Always or OnFailure. Each one
either restarts at once (`restartCount` + 1, running again) or waits out its crash-loop
back-off (`crashloop.py`). A waiting container keeps its `restartCount` and the `containerID` of
the instance that exited. Its state is `waiting` with reason `CrashLoopBackOff` and doBackOff's
message, and `lastState.terminated` holds the exit. `retried_status` covers the end of the
back-off: the waiting containers run again, with `restartCount` + 1.

The pod stays Running throughout. Under Always or OnFailure, a waiting container with a
terminated `lastState` counts as restarting (`getPhase`, pkg/kubelet/kubelet_pods.go). `Ready`
and `ContainersReady` are False while a container is not ready, with reason
`ContainersNotReady` and the message `containers with unready status: [a b]`
(`GenerateContainersReadyCondition` / `GeneratePodReadyCondition`,
pkg/kubelet/status/generate.go).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from kubetrain.devcluster.kubelet import crashloop
from kubetrain.devcluster.kubelet.podstatus import (
    _condition,
    _containers,
    _keep_transition,
    _previous,
    _terminated,
    container_id,
    termination_reason,
    timestamp,
)

Exit = tuple[int, str | None]  # (exit code, termination reason or None for Completed/Error)


def crashed_status(
    pod: dict[str, Any], *, exits: Mapping[str, Exit], waits: Mapping[str, int], now: datetime
) -> dict[str, Any]:
    """The containers named in `exits` exited with their code and reason. Those also named in
    `waits` wait in CrashLoopBackOff for that many seconds, and the others restart at once.
    Containers not named keep their status."""
    previous = _previous(pod)
    statuses = []
    for c in _containers(pod):
        name = c["name"]
        before = previous.get(name)
        if before is None:
            continue
        if name not in exits:
            statuses.append(before)
            continue
        code, reason = exits[name]
        count = int(before.get("restartCount", 0))
        terminated = _terminated(pod, c, code, termination_reason(code, reason), now)
        if name in waits:
            state = crashloop.waiting(pod, name, waits[name])
            entry = {**before, "ready": False, "started": False, "state": state}
            entry.update(containerID=container_id(pod, name, count), restartCount=count)
        else:
            entry = _running(pod, before, name, count + 1, now)
        entry["lastState"] = {"terminated": terminated}
        statuses.append(entry)
    return _with_readiness(pod, statuses, now)


def retried_status(pod: dict[str, Any], names: Collection[str], now: datetime) -> dict[str, Any]:
    """The back-off of the containers named in `names` is over: they run again."""
    statuses = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        name = cs.get("name", "")
        if name in names:
            cs = _running(pod, cs, name, int(cs.get("restartCount", 0)) + 1, now)
        statuses.append(cs)
    return _with_readiness(pod, statuses, now)


def backing_off(pod: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, lastState.terminated.finishedAt) of each app container in CrashLoopBackOff."""
    found = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        state = cs.get("state") or {}
        if (state.get("waiting") or {}).get("reason") == crashloop.REASON:
            finished = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
            found.append((str(cs.get("name", "")), str(finished or "")))
    return found


def _running(
    pod: dict[str, Any], before: dict[str, Any], name: str, count: int, now: datetime
) -> dict[str, Any]:
    return {
        **before,
        "containerID": container_id(pod, name, count),
        "ready": True,
        "started": True,
        "restartCount": count,
        "state": {"running": {"startedAt": timestamp(now)}},
    }


def _with_readiness(pod: dict[str, Any], statuses: list[dict[str, Any]], now: datetime) -> dict[str, Any]:
    status = dict(pod.get("status") or {})
    unready = [str(cs.get("name", "")) for cs in statuses if not cs.get("ready")]
    message = f"containers with unready status: [{' '.join(unready)}]" if unready else None
    conditions = [
        _condition("PodReadyToStartContainers", True, now),
        _condition("Initialized", True, now),
        _condition("Ready", not unready, now, "ContainersNotReady" if unready else None),
        _condition("ContainersReady", not unready, now, "ContainersNotReady" if unready else None),
        _condition("PodScheduled", True, now),
    ]
    for condition in conditions:
        if message and condition["type"] in ("Ready", "ContainersReady"):
            condition["message"] = message
    status.update(
        phase="Running",
        containerStatuses=statuses,
        conditions=_keep_transition(conditions, status.get("conditions") or []),
    )
    return status
