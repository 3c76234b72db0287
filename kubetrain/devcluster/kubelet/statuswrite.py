"""The writes that carry a simulated pod's status: `StatusWriter.write_status` PUTs the `status`
subresource built from the newest pod with its resourceVersion and, on 409, re-reads the pod and
rebuilds (a kubelet status write observes the pod's generation, `podstatus.observed`, and is told
to `written`: the kubelet's Events); `remember` keeps the newest pod seen in the simulator's
watch cache. The transitions that decide what to write are `status.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.kubelet import podstatus
from kubetrain.devcluster.kubelet.recorder import Activity
from kubetrain.devcluster.kubelet.scheduling import Key, pod_key

StatusBuilder = Callable[[dict[str, Any]], dict[str, Any] | None]


def pod_phase(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("phase") or "Pending")


def rv_older(new: dict[str, Any], old: dict[str, Any]) -> bool:
    a = str((new.get("metadata") or {}).get("resourceVersion", ""))
    b = str((old.get("metadata") or {}).get("resourceVersion", ""))
    return a.isdigit() and b.isdigit() and int(a) < int(b)


class StatusWriter:
    def __init__(
        self,
        api: Callable[[], RawApi],
        pods: dict[Key, dict[str, Any]],
        written: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
        activity: Activity | None = None,
    ) -> None:
        self._api = api
        self._written = written  # told of each kubelet status write: (pod before, pod after)
        self._activity = activity or Activity()  # a status write is pod work in flight
        self._pods = pods  # the simulator's watch cache, shared

    def remember(self, pod: dict[str, Any]) -> None:
        key = pod_key(pod)
        old = self._pods.get(key)
        if old is None or not rv_older(pod, old):
            self._pods[key] = pod

    async def write_status(
        self, key: Key, build: StatusBuilder, *, kubelet: bool = True
    ) -> dict[str, Any] | None:
        """PUT the status `build` makes from the newest pod; on 409 re-read and rebuild. A
        kubelet's write carries the generation it acted on (`podstatus.observed`); the
        scheduler's (`kubelet=False`) only what its builder sets."""
        with self._activity.working():
            return await self._write_status(key, build, kubelet)

    async def _write_status(self, key: Key, build: StatusBuilder, kubelet: bool) -> dict[str, Any] | None:
        ns, name = key
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        pod = self._pods.get(key)
        for _ in range(20):
            if pod is None:
                return None
            status = build(pod)
            if status is None:
                return pod
            if kubelet:
                status = podstatus.observed(pod, status)
            code, body = await self._api().request("PUT", f"{path}/status", body={**pod, "status": status})
            if code == 200:
                self.remember(body)
                if kubelet and self._written is not None:
                    self._written(pod, body)
                return dict(body)
            if code == 404:
                return None
            if code != 409:
                raise ApiError(code, body)
            code, body = await self._api().request("GET", path)
            if code == 404:
                return None
            if code != 200:
                raise ApiError(code, body)
            self.remember(body)
            pod = body
        raise ApiError(409, {"message": f"pod {ns}/{name}: status write kept conflicting"})
