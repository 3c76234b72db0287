"""Pod status when an init container fails (e.g. a code-sync fetch, kubelet/git.py). Pure.

Under restartPolicy Never the pod fails and its containers never start; otherwise the kubelet
restarts the init container with back-off, so the pod stays Pending with the failure in the
init container's lastState (the simulated kubelet does not retry it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.devcluster.kubelet.podstatus import (
    _base_status,
    _condition,
    _containers,
    _init_terminated,
    _keep_transition,
)


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
    so the pod stays Pending with the failure in its lastState (restarts are not simulated)."""
    status = _base_status(pod, host_ip, pod_ip, now)
    never = (pod.get("spec") or {}).get("restartPolicy") == "Never"
    inits = []
    reached = False
    for c in _containers(pod, "initContainers"):
        entry: dict[str, Any] = {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": False,
            "started": False,
            "restartCount": 0,
            "lastState": {},
        }
        if reached:
            entry["state"] = {"waiting": {"reason": "PodInitializing"}}
        elif c["name"] == name:
            reached = True
            terminated = _init_terminated(pod, name, code, message, now)
            if never:
                entry["state"] = {"terminated": terminated}
            else:
                entry.update(restartCount=1, lastState={"terminated": terminated})
                entry["state"] = {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "back-off restarting failed container",
                    }
                }
        else:
            entry.update(ready=True, state={"terminated": _init_terminated(pod, c["name"], 0, "", now)})
        inits.append(entry)
    waiting = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": False,
            "started": False,
            "restartCount": 0,
            "state": {"waiting": {"reason": "PodInitializing"}},
            "lastState": {},
        }
        for c in _containers(pod)
    ]
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
