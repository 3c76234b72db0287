"""Pod status when an init container fails (e.g. a code-sync fetch, kubelet/git.py). Pure.

Under restartPolicy Never the pod fails and its containers never start. Otherwise the kubelet
restarts the failed init container in place with its crash-loop back-off (`crashloop.py`), so
the pod stays Pending. The init container's `restartCount` counts the restarts,
`lastState.terminated` holds the latest failure, and its state is `waiting` with reason
`CrashLoopBackOff` until the next try (`retry_due`). A try that succeeds lets the pod start, and
the init container keeps its `restartCount`.

The kubelet restarts a first failure at once and backs off only from the second. A simulated
init container fails the same way every time until a test changes its remote, so that
immediate retry would fail too. The status after one failure is therefore what the kubelet
shows after two: `restartCount` 1, back-off 10 s. The back-off state is read from the status
(`restartCount` restarts, never reset), because an init container never runs the 10 minutes
that would reset it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubetrain.devcluster.kubelet import crashloop
from kubetrain.devcluster.kubelet.podstatus import (
    _base_status,
    _condition,
    _containers,
    _init_terminated,
    _keep_transition,
    _not_started,
)


def _parse(value: str) -> datetime | None:
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def _init_status(pod: dict[str, Any], name: str) -> dict[str, Any]:
    for cs in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if isinstance(cs, dict) and cs.get("name") == name:
            return cs
    return {}


def _restarts(cs: dict[str, Any]) -> int:
    value = cs.get("restartCount")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def retry_due(pod: dict[str, Any]) -> tuple[int, datetime] | None:
    """(restartCount, when the kubelet restarts it) of the pod's backing-off init container."""
    for cs in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if ((cs.get("state") or {}).get("waiting") or {}).get("reason") != "CrashLoopBackOff":
            continue
        restarts = _restarts(cs)
        finished = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        at = _parse(finished) if isinstance(finished, str) else None
        if at is None:
            return None
        return restarts, at + timedelta(seconds=crashloop.delay_seconds(restarts))
    return None


def keep_init_restarts(pod: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """`status` (the pod started after an init container's restarts) with each init container's
    `restartCount` and `lastState` carried over from the pod's current status (in place)."""
    for cs in status.get("initContainerStatuses") or []:
        old = _init_status(pod, cs.get("name", ""))
        if _restarts(old):
            cs["restartCount"] = _restarts(old)
            cs["lastState"] = old.get("lastState") or {}
    return status


def init_backing_off(pod: dict[str, Any]) -> bool:
    """Whether an init container of the pod failed and waits to be restarted."""
    for cs in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if ((cs.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff":
            return True
    return False


def init_failed_status(
    pod: dict[str, Any], name: str, code: int, message: str, *, host_ip: str, pod_ip: str, now: datetime
) -> dict[str, Any]:
    """Init container `name` exited with `code`: under restartPolicy Never the pod fails (the
    containers never start); otherwise the kubelet restarts the init container with back-off,
    so the pod stays Pending with the failure in its lastState and one more restart counted."""
    status = _base_status(pod, host_ip, pod_ip, now)
    never = (pod.get("spec") or {}).get("restartPolicy") == "Never"
    inits = []
    reached = False
    for c in _containers(pod, "initContainers"):
        entry = _not_started(c)
        if reached:
            entry["state"] = {"waiting": {"reason": "PodInitializing"}}
        elif c["name"] == name:
            reached = True
            terminated = _init_terminated(pod, name, code, message, now)
            restarts = _restarts(_init_status(pod, name))
            if never:
                entry.update(restartCount=restarts, state={"terminated": terminated})
            else:
                restarts += 1
                entry.update(restartCount=restarts, lastState={"terminated": terminated})
                entry["state"] = crashloop.waiting(pod, name, crashloop.delay_seconds(restarts))
        else:
            entry.update(ready=True, state={"terminated": _init_terminated(pod, c["name"], 0, "", now)})
        inits.append(entry)
    waiting = [_not_started(c, state={"waiting": {"reason": "PodInitializing"}}) for c in _containers(pod)]
    conditions = [
        _condition("PodReadyToStartContainers", True, now),
        _condition("Initialized", False, now, "ContainersNotInitialized"),
        _condition("Ready", False, now, "PodFailed" if never else "ContainersNotReady"),
        _condition("ContainersReady", False, now, "PodFailed" if never else "ContainersNotReady"),
        _condition("PodScheduled", True, now),
    ]
    status.update(
        phase="Failed" if never else "Pending",
        conditions=_keep_transition(conditions, (pod.get("status") or {}).get("conditions") or []),
        initContainerStatuses=inits,
        containerStatuses=waiting,
    )
    return status
