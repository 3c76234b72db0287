"""What the simulated scheduler's tests share: create a bare pod, and read what kube-scheduler
leaves on a pod it cannot place (the `PodScheduled=False` condition, the FailedScheduling Events)
or the node it bound the pod to. The pods live in `default`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.client import RawApi

NS = "default"
Obj = dict[str, Any]


async def create(raw: RawApi, pod: Obj) -> None:
    code, body = await raw.request("POST", f"/api/v1/namespaces/{NS}/pods", body=pod)
    assert code == 201, body


def unschedulable(message: str) -> Callable[[Obj | None], bool]:
    """A `wait_for` predicate: the pod is `PodScheduled=False` with kube-scheduler's `message`."""

    def check(pod: Obj | None) -> bool:
        conds = ((pod or {}).get("status") or {}).get("conditions") or []
        return any(
            c["type"] == "PodScheduled" and c["status"] == "False" and c.get("message") == message
            for c in conds
        )

    return check


def node_of(pod: Obj | None) -> str | None:
    return ((pod or {}).get("spec") or {}).get("nodeName")


async def scheduling_events(raw: RawApi, name: str) -> list[Obj]:
    """The FailedScheduling Events of pod `name`, as written so far."""
    query = {"fieldSelector": f"involvedObject.name={name}"}
    code, body = await raw.request("GET", f"/api/v1/namespaces/{NS}/events", query=query)
    assert code == 200, body
    return [e for e in body["items"] if e["reason"] == "FailedScheduling"]
