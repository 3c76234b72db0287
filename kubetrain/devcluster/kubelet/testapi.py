"""The simulator's test API for one pod: wait for it, finish it, evict it, restart a container.

`PodTestApi` is a mixin of `PodSimulator` (simulator.py), which owns the state it reads: the
pods as last seen by its watch, the per-pod locks and timers, and the status transitions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.devcluster.kubelet import podstatus
from kubetrain.devcluster.kubelet.behaviour import exit_outcome
from kubetrain.devcluster.kubelet.scheduling import Key, PodTimers
from kubetrain.devcluster.kubelet.status import PodTransitions
from kubetrain.devcluster.kubelet.statuswrite import pod_phase


class PodTestApi:
    """Each action waits, up to `wait_seconds`, for the pod to be Running on a simulated node."""

    _pods: dict[Key, dict[str, Any]]
    _changed: asyncio.Condition
    _timers: PodTimers
    _status: PodTransitions

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod as last seen by the simulator's watch."""
        return self._pods.get((namespace, name))

    async def wait_for(
        self,
        namespace: str,
        name: str,
        predicate: Callable[[dict[str, Any] | None], bool],
        wait_seconds: float = 10,
    ) -> dict[str, Any] | None:
        key = (namespace, name)
        async with self._changed:
            await asyncio.wait_for(
                self._changed.wait_for(lambda: predicate(self._pods.get(key))), wait_seconds
            )
        return self._pods.get(key)

    async def wait_for_phase(
        self, namespace: str, name: str, phase: str, wait_seconds: float = 10
    ) -> dict[str, Any]:
        pod = await self.wait_for(
            namespace, name, lambda p: p is not None and pod_phase(p) == phase, wait_seconds
        )
        assert pod is not None
        return pod

    async def _running(self, namespace: str, name: str, wait_seconds: float) -> Key:
        def ready(pod: dict[str, Any] | None) -> bool:
            return pod is not None and (
                pod_phase(pod) in podstatus.TERMINAL_PHASES
                or (self._status.ours(pod) and pod_phase(pod) == "Running")
            )

        pod = await self.wait_for(namespace, name, ready, wait_seconds)
        assert pod is not None
        if pod_phase(pod) != "Running":
            raise ValueError(f"pod {namespace}/{name} is already {pod_phase(pod)}")
        return namespace, name

    async def finish(
        self,
        namespace: str,
        name: str,
        *,
        exit_code: int = 0,
        reason: str | None = None,
        wait_seconds: float = 10,
        container_exit_codes: Mapping[str, int] | None = None,
    ) -> dict[str, Any] | None:
        """Every container exits with `exit_code` (those named in `container_exit_codes` with
        theirs, e.g. a sidecar failing beside a training container that succeeded); the pod
        becomes Succeeded (all 0) or Failed."""
        if reason == "Evicted":
            return await self.evict(namespace, name, wait_seconds=wait_seconds)
        key = await self._running(namespace, name, wait_seconds)
        async with self._timers.lock(key):
            self._timers.cancel(key)
            return await self._status.write_status(
                key,
                self._status.running_only(self._status.exit_builder(exit_code, reason, container_exit_codes)),
            )

    async def evict(self, namespace: str, name: str, *, wait_seconds: float = 10) -> dict[str, Any] | None:
        """A kubelet eviction: phase Failed, reason Evicted, DisruptionTarget condition."""
        key = await self._running(namespace, name, wait_seconds)
        async with self._timers.lock(key):
            self._timers.cancel(key)
            build = self._status.running_only(self._status.evict_builder())
            return await self._status.write_status(key, build)

    async def restart_container(
        self,
        namespace: str,
        name: str,
        exit_code: int = 137,
        *,
        reason: str | None = None,
        container: str | None = None,
        wait_seconds: float = 10,
    ) -> dict[str, Any] | None:
        """The container (default: every container) exits with `exit_code` and the kubelet
        restarts it in place at once: a test's shortcut over its crash-loop back-off (the exit
        and the restart once the back-off is over, in one step; the back-off moves on as that
        restart moves it, so an annotated exit after it backs off as it would). ValueError if
        the pod's restartPolicy would not restart it."""
        key = await self._running(namespace, name, wait_seconds)
        pod = self._pods[key]
        if exit_outcome(pod, exit_code, 0, None) != "restart":
            policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
            raise ValueError(
                f"pod {namespace}/{name} has restartPolicy {policy}: a kubelet does not restart a container "
                f"that exits with {exit_code}; use finish()"
            )
        async with self._timers.lock(key):
            self._timers.cancel(key)
            return await self._status.write_status(
                key, self._status.running_only(self._status.restart_builder(exit_code, reason, container))
            )
