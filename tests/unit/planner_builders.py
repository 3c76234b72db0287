"""Builders for jobs and pods used by the planner and env tests (tests/unit/test_planner_*,
tests/unit/test_env_*). Plain wire dicts, exactly what the API server would hand the controller."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

KINDS = {
    "TFJob": ("tfReplicaSpecs", "tensorflow"),
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
    "MXJob": ("mxReplicaSpecs", "mxnet"),
}
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def container(name: str, image: str = "example.com/train:1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def replica(
    kind: str,
    replicas: int = 1,
    restart_policy: str | None = None,
    *,
    containers: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    resources: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    cname = KINDS[kind][1]
    main = container(cname)
    if resources is not None:
        main["resources"] = resources
    template: dict[str, Any] = {"spec": {"containers": containers or [main], **spec}}
    if labels:
        template["metadata"] = {"labels": labels}
    out: dict[str, Any] = {"replicas": replicas, "template": template}
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def job(
    kind: str,
    replica_specs: dict[str, dict[str, Any]],
    *,
    name: str = "train",
    namespace: str = "ns",
    uid: str = "uid-1",
    generation: int = 1,
    run_policy: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    field = KINDS[kind][0]
    body: dict[str, Any] = {field: replica_specs, **spec}
    if run_policy is not None:
        body["runPolicy"] = run_policy
    obj: dict[str, Any] = {
        "apiVersion": "kubetrain.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "generation": generation},
        "spec": body,
    }
    if status is not None:
        obj["status"] = status
    return obj


def with_status(obj: dict[str, Any], status: dict[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    if status is None:
        out.pop("status", None)
    else:
        out["status"] = copy.deepcopy(status)
    return out


def pod(
    obj: dict[str, Any],
    rtype: str,
    index: int,
    phase: str = "Running",
    *,
    exit_code: int | None = None,
    restart_count: int = 0,
    reason: str | None = None,
    deleting: bool = False,
    uid: str | None = None,
    annotations: dict[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    container_name: str | None = None,
    owner_uid: str | None = None,
) -> dict[str, Any]:
    """A pod as the informer would show it, owned by `obj`."""
    name = obj["metadata"]["name"]
    cname = container_name or KINDS[obj["kind"]][1]
    state: dict[str, Any]
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed"}}
    elif phase == "Running":
        state = {"running": {"startedAt": ts(T0)}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    cstatus = {"name": cname, "restartCount": restart_count, "state": state}
    meta: dict[str, Any] = {
        "name": f"{name}-{rtype.lower()}-{index}",
        "namespace": obj["metadata"]["namespace"],
        "uid": uid or f"pod-{rtype.lower()}-{index}",
        "labels": {
            "kubetrain.io/job-name": name,
            "kubetrain.io/replica-type": rtype.lower(),
            "kubetrain.io/replica-index": str(index),
        },
        "ownerReferences": [
            {
                "apiVersion": "kubetrain.io/v1",
                "kind": obj["kind"],
                "name": name,
                "uid": owner_uid or obj["metadata"]["uid"],
                "controller": True,
            }
        ],
    }
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = ts(T0)
    status: dict[str, Any] = {"phase": phase, "containerStatuses": [cstatus]}
    if reason:
        status["reason"] = reason
    if conditions:
        status["conditions"] = conditions
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {}, "status": status}


def env_of(pod_obj: dict[str, Any], container_index: int = 0) -> dict[str, str]:
    env = pod_obj["spec"]["containers"][container_index].get("env") or []
    return {e["name"]: e["value"] for e in env}
