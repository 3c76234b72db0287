"""Pure builders of the pod status a kubelet writes.

No I/O and no hidden clock: every function takes `now`. `kubetrain.devcluster.kubelet.simulator` feeds
these to the API server. Shapes follow core/v1 (PodStatus, ContainerStatus) and the kubelet's
own conventions (condition types and reasons, `PodCompleted` when containers stop, `Evicted` +
`DisruptionTarget`/`TerminationByKubelet` for kubelet evictions). What a pod's annotations ask
of the simulated kubelet is `behaviour.py`'s; the Node and Binding objects `nodeobjects.py`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

TERMINAL_PHASES = ("Succeeded", "Failed")
EVICTION_MESSAGE = "The node was low on resource: memory. "
TERMINATION_MESSAGE = "pod deleted: the kubelet stopped its containers"


def timestamp(now: datetime) -> str:
    """metav1.Time as JSON: RFC 3339, second precision, UTC."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def termination_reason(exit_code: int, reason: str | None) -> str:
    return reason or ("Completed" if exit_code == 0 else "Error")


def _containers(pod: dict[str, Any], key: str = "containers") -> list[dict[str, Any]]:
    return list((pod.get("spec") or {}).get(key) or [])


def _previous(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return {s.get("name", ""): s for s in statuses}


def container_id(pod: dict[str, Any], name: str, restart_count: int) -> str:
    uid = (pod.get("metadata") or {}).get("uid", "")
    return f"containerd://sim-{uid}-{name}-{restart_count}"


def restart_count(pod: dict[str, Any], container: str | None = None) -> int:
    """The restartCount of `container` (default: the first container)."""
    name = container or (_containers(pod)[0]["name"] if _containers(pod) else "")
    return int(_previous(pod).get(name, {}).get("restartCount", 0))


def first_running(pod: dict[str, Any]) -> bool:
    """Whether the first container runs (not waiting, e.g. out a crash-loop back-off)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and "running" in (statuses[0].get("state") or {})


def _condition(kind: str, status: bool, now: datetime, reason: str | None = None) -> dict[str, Any]:
    condition: dict[str, Any] = {
        "type": kind,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": timestamp(now),
    }
    if reason:
        condition["reason"] = reason
    return condition


# The conditions a kubelet owns (`kubetypes.PodConditionsByKubelet` and PodReadyToStartContainers):
# `generateAPIPodStatus` (pkg/kubelet/kubelet_pods.go) makes each of them on every sync.
KUBELET_CONDITIONS = frozenset(
    {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}
)
TERMINATION_BY_KUBELET = "TerminationByKubelet"  # v1.PodReasonTerminationByKubelet


def observed(pod: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """`status` as the kubelet writes it for `pod`: `status.observedGeneration` is the pod's
    `metadata.generation` it acted on (`podutil.CalculatePodStatusObservedGeneration`), and so is
    the `observedGeneration` of each condition it owns and of the DisruptionTarget it sets itself
    (reason TerminationByKubelet: the eviction manager's `evictPod`) —
    `podutil.CalculatePodConditionObservedGeneration`, which with the PodObservedGenerationTracking
    gate locked on (1.35+) is the generation. Conditions others set keep theirs. A pod without a
    generation (from a cluster older than the pod generation feature) gets none."""
    generation = (pod.get("metadata") or {}).get("generation")
    if not isinstance(generation, int) or isinstance(generation, bool) or generation <= 0:
        return status
    out = {**status, "observedGeneration": generation}
    if "conditions" in status:
        out["conditions"] = [
            {**c, "observedGeneration": generation} if _kubelet_owned(c) else c
            for c in status.get("conditions") or []
        ]
    return out


def unobserved_generation(pod: dict[str, Any]) -> int | None:
    """The pod's `metadata.generation` when the status its kubelet wrote (one with a hostIP)
    observes an older one and the pod neither ended nor is being deleted; else None."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    generation = meta.get("generation")
    if (
        not isinstance(generation, int)
        or isinstance(generation, bool)
        or status.get("phase") in TERMINAL_PHASES
        or meta.get("deletionTimestamp")
        or not status.get("hostIP")
        or status.get("observedGeneration") == generation
    ):
        return None
    return generation


def _kubelet_owned(condition: Any) -> bool:
    if not isinstance(condition, dict):
        return False
    kind = condition.get("type")
    return kind in KUBELET_CONDITIONS or (
        kind == "DisruptionTarget" and condition.get("reason") == TERMINATION_BY_KUBELET
    )


def _keep_transition(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep lastTransitionTime of conditions whose status did not change."""
    by_type = {c.get("type"): c for c in old}
    out = []
    for condition in new:
        before = by_type.get(condition["type"])
        if (
            before is not None
            and before.get("status") == condition["status"]
            and before.get("lastTransitionTime")
        ):
            condition = {**condition, "lastTransitionTime": before["lastTransitionTime"]}
        out.append(condition)
    # conditions others set (e.g. by a scheduler) that the kubelet does not own survive
    owned = {c["type"] for c in new}
    out.extend(c for c in old if c.get("type") not in owned)
    return out


def _base_status(pod: dict[str, Any], host_ip: str, pod_ip: str, now: datetime) -> dict[str, Any]:
    old = pod.get("status") or {}
    ips = [{"ip": pod_ip}]
    return {
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": ips,
        "startTime": old.get("startTime") or timestamp(now),
        "qosClass": old.get("qosClass") or "BestEffort",
    }


InitOutcomes = dict[str, tuple[int, str]]  # init container name -> (exit code, message)


def _init_terminated(
    pod: dict[str, Any], name: str, code: int, message: str, now: datetime
) -> dict[str, Any]:
    terminated: dict[str, Any] = {
        "exitCode": code,
        "reason": "Completed" if code == 0 else "Error",
        "startedAt": timestamp(now),
        "finishedAt": timestamp(now),
        "containerID": container_id(pod, name, 0),
    }
    if message:
        terminated["message"] = message
    return terminated


def _init_statuses(
    pod: dict[str, Any], now: datetime, outcomes: InitOutcomes | None = None
) -> list[dict[str, Any]]:
    return [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "containerID": container_id(pod, c["name"], 0),
            "ready": True,
            "started": False,
            "restartCount": 0,
            "state": {
                "terminated": _init_terminated(
                    pod, c["name"], 0, (outcomes or {}).get(c["name"], (0, ""))[1], now
                )
            },
            "lastState": {},
        }
        for c in _containers(pod, "initContainers")
    ]


def running_status(
    pod: dict[str, Any],
    *,
    host_ip: str,
    pod_ip: str,
    now: datetime,
    init_outcomes: InitOutcomes | None = None,
) -> dict[str, Any]:
    """Pending → Running: every container started and ready."""
    status = _base_status(pod, host_ip, pod_ip, now)
    previous = _previous(pod)
    statuses = []
    for c in _containers(pod):
        count = int(previous.get(c["name"], {}).get("restartCount", 0))
        statuses.append(
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "containerID": container_id(pod, c["name"], count),
                "ready": True,
                "started": True,
                "restartCount": count,
                "state": {"running": {"startedAt": timestamp(now)}},
                "lastState": previous.get(c["name"], {}).get("lastState") or {},
            }
        )
    old_conditions = (pod.get("status") or {}).get("conditions") or []
    conditions = [
        _condition("PodReadyToStartContainers", True, now),
        _condition("Initialized", True, now),
        _condition("Ready", True, now),
        _condition("ContainersReady", True, now),
        _condition("PodScheduled", True, now),
    ]
    status.update(
        phase="Running",
        conditions=_keep_transition(conditions, old_conditions),
        containerStatuses=statuses,
    )
    init = _init_statuses(pod, now, init_outcomes)
    if init:
        status["initContainerStatuses"] = init
    return status


def _terminated(
    pod: dict[str, Any], c: dict[str, Any], exit_code: int, reason: str, now: datetime
) -> dict[str, Any]:
    previous = _previous(pod).get(c["name"], {})
    count = int(previous.get("restartCount", 0))
    started = ((previous.get("state") or {}).get("running") or {}).get("startedAt") or timestamp(now)
    return {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": timestamp(now),
        "containerID": container_id(pod, c["name"], count),
    }


def terminated_status(
    pod: dict[str, Any],
    *,
    exit_code: int,
    reason: str | None,
    now: datetime,
    phase: str | None = None,
    pod_reason: str | None = None,
    message: str | None = None,
    disruption: str | None = None,
    host_ip: str = "",
    pod_ip: str = "",
    container_codes: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Containers exited with `exit_code` (those named in `container_codes` with theirs); the pod
    is in a terminal phase — Succeeded when every container exited 0, else Failed
    (`getPhase` in pkg/kubelet/kubelet_pods.go), unless `phase` is given. `disruption` adds a
    DisruptionTarget condition with that reason."""
    codes = {c["name"]: (container_codes or {}).get(c["name"], exit_code) for c in _containers(pod)}
    old = pod.get("status") or {}
    status = _base_status(pod, host_ip or old.get("hostIP", ""), pod_ip or old.get("podIP", ""), now)
    previous = _previous(pod)
    statuses = []
    for c in _containers(pod):
        code = codes[c["name"]]
        before = previous.get(c["name"], {})
        count = int(before.get("restartCount", 0))
        statuses.append(
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "containerID": container_id(pod, c["name"], count),
                "ready": False,
                "started": False,
                "restartCount": count,
                "state": {"terminated": _terminated(pod, c, code, termination_reason(code, reason), now)},
                "lastState": before.get("lastState") or {},
            }
        )
    conditions = [
        _condition("PodReadyToStartContainers", False, now),
        _condition("Initialized", True, now),
        _condition("Ready", False, now, "PodCompleted"),
        _condition("ContainersReady", False, now, "PodCompleted"),
        _condition("PodScheduled", True, now),
    ]
    if disruption:
        target = _condition("DisruptionTarget", True, now, disruption)
        target["message"] = message or ""
        conditions.append(target)
    status.update(
        phase=phase or ("Succeeded" if (not any(codes.values()) if codes else exit_code == 0) else "Failed"),
        conditions=_keep_transition(conditions, old.get("conditions") or []),
        containerStatuses=statuses,
    )
    if old.get("initContainerStatuses"):
        status["initContainerStatuses"] = old["initContainerStatuses"]
    if pod_reason:
        status["reason"] = pod_reason
    if message:
        status["message"] = message
    return status


def evicted_status(pod: dict[str, Any], *, now: datetime, message: str = EVICTION_MESSAGE) -> dict[str, Any]:
    """A kubelet eviction: phase Failed, reason Evicted, containers killed (137), DisruptionTarget."""
    return terminated_status(
        pod,
        exit_code=137,
        reason="Error",
        now=now,
        phase="Failed",
        pod_reason="Evicted",
        message=message,
        disruption=TERMINATION_BY_KUBELET,
    )


def _not_started(container: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A container status of a container that has not started (yet), with `fields` on top."""
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": False,
        "started": False,
        "restartCount": 0,
        "lastState": {},
        **fields,
    }
