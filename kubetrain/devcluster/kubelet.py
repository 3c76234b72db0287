"""PodSimulator: a simulated kubelet (and minimal scheduler) that is an ordinary API client.

It talks to any API server through a kubeconfig (devcluster, or a real cluster whose nodes have
no kubelets), with plain-dict bodies:

- registers `nodes` Ready Node objects named `<node_prefix>-<i>` if absent, and renews their
  Leases in `kube-node-lease` every 10 s (so a real node controller keeps them Ready);
- watches pods (all namespaces, or `namespace`); binds unscheduled pods whose
  `spec.schedulerName` is in `scheduler_names` (default `("default-scheduler",)`; use `()` on a
  cluster that has a scheduler) round-robin to its nodes via POST `pods/NAME/binding` — gangs are
  NOT its concern;
- runs every pod bound to one of its nodes: Pending → Running (containers running and ready,
  podIP, startTime, Ready conditions) → Succeeded/Failed, writing the `status` subresource with
  the pod's resourceVersion and re-reading + retrying on 409;
- finishes graceful deletions like a kubelet: a pod with deletionTimestamp gets its containers
  terminated (exit 143, phase Failed) and is then DELETEd with gracePeriodSeconds=0.

Per-pod behaviour comes from annotations (names and meaning in `kubetrain.devcluster.podstatus`):
`sim.kubetrain.io/run-seconds`, `.../exit-code`, `.../reason` (e.g. OOMKilled; Evicted → eviction),
`.../restarts-before-exit`, `.../start-seconds`. Without run-seconds a pod stays Running until the
test API says otherwise, unless the simulator was given `default_run_seconds` (`kubetrain dev`).
On exit the pod's restartPolicy decides like a kubelet: Never → terminal; OnFailure → restart in
place unless the exit code is 0; Always → restart in place (restartCount + 1, lastState.terminated).

Test API (each waits, up to `wait_seconds`, for the pod to be Running on a simulated node):
`finish(ns, name, exit_code=0, reason=None)` — every container exits, the pod becomes Succeeded
(exit 0) or Failed, whatever its restartPolicy; `evict(ns, name)` — kubelet eviction: Failed,
reason Evicted, DisruptionTarget condition; `restart_container(ns, name, exit_code=137,
container=None)` — an in-place restart (ValueError if the restartPolicy would not restart);
`wait_for(ns, name, predicate)` / `wait_for_phase(ns, name, phase)`; `pod(ns, name)` (last seen).

Durations run on an injectable `kubetrain.kube.clock.Clock` (tests pass a FakeClock and advance
it). Start it with `async with PodSimulator(kubeconfig) as sim:` or start()/stop().
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kubetrain.devcluster import podstatus
from kubetrain.devcluster.kubelet_api import ApiError, RawApi, list_then_watch, register_nodes, renew_lease
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

Key = tuple[str, str]
StatusBuilder = Callable[[dict[str, Any]], dict[str, Any] | None]

HEARTBEAT_SECONDS = 10.0
TERMINATION_EXIT_CODE = 143


def _key(pod: dict[str, Any]) -> Key:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _phase(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("phase") or "Pending")


def _rv_older(new: dict[str, Any], old: dict[str, Any]) -> bool:
    a = str((new.get("metadata") or {}).get("resourceVersion", ""))
    b = str((old.get("metadata") or {}).get("resourceVersion", ""))
    return a.isdigit() and b.isdigit() and int(a) < int(b)


class PodSimulator:
    def __init__(
        self,
        kubeconfig_path: str,
        *,
        nodes: int = 3,
        namespace: str | None = None,
        scheduler_names: tuple[str, ...] = ("default-scheduler",),
        default_run_seconds: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
        node_prefix: str = "kubetrain-sim-node",
        user_agent: str = "kubetrain-pod-simulator",
    ) -> None:
        self.kubeconfig_path = kubeconfig_path
        self.namespace = namespace
        self.scheduler_names = tuple(scheduler_names)
        self.default_run_seconds = default_run_seconds
        self.clock = clock
        self.node_names = [f"{node_prefix}-{i}" for i in range(nodes)]
        self._host_ips = {n: f"192.168.77.{i + 10}" for i, n in enumerate(self.node_names)}
        self._user_agent = user_agent
        self._api: RawApi | None = None
        self._pods: dict[Key, dict[str, Any]] = {}
        self._changed = asyncio.Condition()
        self._locks: dict[Key, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._timers: dict[Key, tuple[tuple[Any, ...], asyncio.Task[None]]] = {}
        self._starts: dict[tuple[str, int], float] = {}  # (uid, restartCount) -> clock.monotonic()
        self._pod_ips: dict[str, str] = {}
        self._ip_counter = 0
        self._bind_counter = 0
        self._synced = asyncio.Event()
        self._deleted: set[str] = set()  # uids this kubelet already removed

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> PodSimulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._api = await RawApi.from_kubeconfig(self.kubeconfig_path, self._user_agent)
        await register_nodes(self.api, self._host_ips, self.clock.now())
        self._spawn(list_then_watch(self.api, self._pods_path(), self._observe, self._relisted))
        self._spawn(self._heartbeat_loop())
        await asyncio.wait_for(self._synced.wait(), 30)

    async def stop(self) -> None:
        tasks = list(self._tasks) + [t for _, t in self._timers.values()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self._timers.clear()
        if self._api is not None:
            await self._api.close()
            self._api = None

    @property
    def api(self) -> RawApi:
        if self._api is None:
            raise RuntimeError("PodSimulator is not started")
        return self._api

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- nodes ----------------------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        while True:
            for name in self.node_names:
                try:
                    await renew_lease(self.api, name, self.clock.now())
                except (TimeoutError, ApiError, OSError) as exc:
                    log.debug("node lease %s not renewed: %s", name, exc)
            await self.clock.sleep(HEARTBEAT_SECONDS)

    def _pods_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods" if self.namespace else "/api/v1/pods"

    async def _relisted(self, pods: list[dict[str, Any]]) -> None:
        seen = {_key(pod) for pod in pods}
        for pod in pods:
            await self._observe("ADDED", pod)
        for key in [k for k in self._pods if k not in seen]:
            await self._observe("DELETED", self._pods[key])
        self._synced.set()

    async def _observe(self, kind: str, pod: dict[str, Any]) -> None:
        key = _key(pod)
        if kind == "DELETED":
            self._pods.pop(key, None)
            self._cancel_timer(key)
            uid = str((pod.get("metadata") or {}).get("uid", ""))
            self._deleted.discard(uid)
            self._pod_ips.pop(uid, None)
            self._starts = {k: v for k, v in self._starts.items() if k[0] != uid}
        else:
            old = self._pods.get(key)
            if old is not None and _rv_older(pod, old):
                return
            self._pods[key] = pod
        async with self._changed:
            self._changed.notify_all()
        if kind != "DELETED":
            self._spawn(self._reconcile(key))

    def _remember(self, pod: dict[str, Any]) -> None:
        key = _key(pod)
        old = self._pods.get(key)
        if old is None or not _rv_older(pod, old):
            self._pods[key] = pod

    # -- reconcile ------------------------------------------------------------------------------

    def _lock(self, key: Key) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def _reconcile(self, key: Key, attempt: int = 0) -> None:
        try:
            async with self._lock(key):
                await self._reconcile_locked(key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an API failure: retry with back-off, then wait for the next event
            log.debug("pod %s/%s: %s", *key, exc)
            if attempt < 6:
                await asyncio.sleep(min(5.0, 0.05 * 2**attempt))
                await self._reconcile(key, attempt + 1)

    def _ours(self, pod: dict[str, Any]) -> bool:
        return (pod.get("spec") or {}).get("nodeName") in self._host_ips

    async def _reconcile_locked(self, key: Key) -> None:
        pod = self._pods.get(key)
        if pod is None:
            return
        spec = pod.get("spec") or {}
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            if self._ours(pod):
                await self._finish_deletion(key)
            return
        if not spec.get("nodeName"):
            if (spec.get("schedulerName") or "default-scheduler") in self.scheduler_names:
                await self._bind(pod)
            return
        if not self._ours(pod) or _phase(pod) in podstatus.TERMINAL_PHASES:
            self._cancel_timer(key)
            return
        try:
            behaviour = podstatus.Behaviour.from_pod(pod, self.default_run_seconds)
        except ValueError as exc:
            log.warning("pod %s/%s: %s; running it without simulated behaviour", *key, exc)
            behaviour = podstatus.Behaviour()
        uid = str(pod["metadata"].get("uid", ""))
        if _phase(pod) == "Pending":
            if behaviour.start_seconds > 0:
                self._schedule(key, ("start", uid), behaviour.start_seconds, self._start)
            else:
                await self._start(key)
            return
        if behaviour.run_seconds is not None:
            restarts = podstatus.restart_count(pod)
            started = self._starts.setdefault((uid, restarts), self.clock.monotonic())
            remaining = behaviour.run_seconds - (self.clock.monotonic() - started)
            self._schedule(key, ("exit", uid, restarts), remaining, self._run_ended)

    def _schedule(
        self, key: Key, marker: tuple[Any, ...], delay: float, action: Callable[[Key], Awaitable[None]]
    ) -> None:
        current = self._timers.get(key)
        if current is not None and current[0] == marker and not current[1].done():
            return
        self._cancel_timer(key)

        async def fire() -> None:
            await self.clock.sleep(max(0.0, delay))
            self._timers.pop(key, None)
            async with self._lock(key):
                pod = self._pods.get(key)
                if pod is not None and str(pod["metadata"].get("uid", "")) == marker[1]:
                    await action(key)

        self._timers[key] = (marker, asyncio.ensure_future(fire()))

    def _cancel_timer(self, key: Key) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None and timer[1] is not asyncio.current_task():
            timer[1].cancel()

    async def _bind(self, pod: dict[str, Any]) -> None:
        node = self.node_names[self._bind_counter % len(self.node_names)]
        self._bind_counter += 1
        ns, name = _key(pod)
        code, body = await self.api.request(
            "POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body=podstatus.binding(pod, node)
        )
        if code not in (200, 201, 404, 409):
            raise ApiError(code, body)

    def _pod_ip(self, pod: dict[str, Any]) -> str:
        spec = pod.get("spec") or {}
        if spec.get("hostNetwork"):
            return self._host_ips[spec["nodeName"]]
        uid = str(pod["metadata"].get("uid", ""))
        if uid not in self._pod_ips:
            self._ip_counter += 1
            self._pod_ips[uid] = f"10.244.{self._ip_counter // 250}.{self._ip_counter % 250 + 2}"
        return self._pod_ips[uid]

    async def _start(self, key: Key) -> None:
        def build(pod: dict[str, Any]) -> dict[str, Any] | None:
            if not self._ours(pod) or _phase(pod) != "Pending" or pod["metadata"].get("deletionTimestamp"):
                return None
            host_ip = self._host_ips[pod["spec"]["nodeName"]]
            return podstatus.running_status(
                pod, host_ip=host_ip, pod_ip=self._pod_ip(pod), now=self.clock.now()
            )

        await self._write_status(key, build)

    async def _run_ended(self, key: Key) -> None:
        pod = self._pods.get(key)
        if pod is None or _phase(pod) != "Running":
            return
        behaviour = podstatus.Behaviour.from_pod(pod, self.default_run_seconds)
        if behaviour.reason == "Evicted":
            await self._write_status(
                key, self._running_only(lambda p: podstatus.evicted_status(p, now=self.clock.now()))
            )
            return
        outcome = podstatus.exit_outcome(
            pod, behaviour.exit_code, podstatus.restart_count(pod), behaviour.restarts_before_exit
        )
        if outcome == "restart":
            await self._write_status(
                key, self._running_only(self._restart_builder(behaviour.exit_code, behaviour.reason))
            )
        else:
            await self._write_status(
                key, self._running_only(self._exit_builder(behaviour.exit_code, behaviour.reason))
            )

    def _running_only(self, build: StatusBuilder) -> StatusBuilder:
        def guarded(pod: dict[str, Any]) -> dict[str, Any] | None:
            if _phase(pod) != "Running" or pod["metadata"].get("deletionTimestamp"):
                return None
            return build(pod)

        return guarded

    def _exit_builder(self, exit_code: int, reason: str | None) -> StatusBuilder:
        return lambda pod: podstatus.terminated_status(
            pod, exit_code=exit_code, reason=reason, now=self.clock.now()
        )

    def _restart_builder(
        self, exit_code: int, reason: str | None, container: str | None = None
    ) -> StatusBuilder:
        def build(pod: dict[str, Any]) -> dict[str, Any]:
            status = podstatus.restarted_status(
                pod, exit_code=exit_code, reason=reason, now=self.clock.now(), container=container
            )
            uid = str(pod["metadata"].get("uid", ""))
            self._starts[(uid, podstatus.restart_count({**pod, "status": status}))] = self.clock.monotonic()
            return status

        return build

    async def _finish_deletion(self, key: Key) -> None:
        self._cancel_timer(key)
        pod = self._pods[key]
        if str(pod["metadata"].get("uid", "")) in self._deleted:
            return
        if _phase(pod) not in podstatus.TERMINAL_PHASES:

            def build(p: dict[str, Any]) -> dict[str, Any] | None:
                if _phase(p) in podstatus.TERMINAL_PHASES:
                    return None
                return podstatus.terminated_status(
                    p, exit_code=TERMINATION_EXIT_CODE, reason="Error", now=self.clock.now()
                )

            written = await self._write_status(key, build)
            pod = written or pod
        ns, name = key
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": pod["metadata"].get("uid")},
        }
        code, body = await self.api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", body=options)
        if code not in (200, 202, 404, 409):
            raise ApiError(code, body)
        self._deleted.add(str(pod["metadata"].get("uid", "")))

    async def _write_status(self, key: Key, build: StatusBuilder) -> dict[str, Any] | None:
        """PUT the status `build` makes from the newest pod; on 409 re-read and rebuild."""
        ns, name = key
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        pod = self._pods.get(key)
        for _ in range(20):
            if pod is None:
                return None
            status = build(pod)
            if status is None:
                return pod
            code, body = await self.api.request("PUT", f"{path}/status", body={**pod, "status": status})
            if code == 200:
                self._remember(body)
                return dict(body)
            if code == 404:
                return None
            if code != 409:
                raise ApiError(code, body)
            code, body = await self.api.request("GET", path)
            if code == 404:
                return None
            if code != 200:
                raise ApiError(code, body)
            self._remember(body)
            pod = body
        raise ApiError(409, {"message": f"pod {ns}/{name}: status write kept conflicting"})

    # -- test API -------------------------------------------------------------------------------

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
            namespace, name, lambda p: p is not None and _phase(p) == phase, wait_seconds
        )
        assert pod is not None
        return pod

    async def _running(self, namespace: str, name: str, wait_seconds: float) -> Key:
        def ready(pod: dict[str, Any] | None) -> bool:
            return pod is not None and (
                _phase(pod) in podstatus.TERMINAL_PHASES or (self._ours(pod) and _phase(pod) == "Running")
            )

        pod = await self.wait_for(namespace, name, ready, wait_seconds)
        assert pod is not None
        if _phase(pod) != "Running":
            raise ValueError(f"pod {namespace}/{name} is already {_phase(pod)}")
        return namespace, name

    async def finish(
        self,
        namespace: str,
        name: str,
        *,
        exit_code: int = 0,
        reason: str | None = None,
        wait_seconds: float = 10,
    ) -> dict[str, Any] | None:
        """Every container exits with `exit_code`; the pod becomes Succeeded (0) or Failed."""
        if reason == "Evicted":
            return await self.evict(namespace, name, wait_seconds=wait_seconds)
        key = await self._running(namespace, name, wait_seconds)
        async with self._lock(key):
            self._cancel_timer(key)
            return await self._write_status(key, self._running_only(self._exit_builder(exit_code, reason)))

    async def evict(self, namespace: str, name: str, *, wait_seconds: float = 10) -> dict[str, Any] | None:
        """A kubelet eviction: phase Failed, reason Evicted, DisruptionTarget condition."""
        key = await self._running(namespace, name, wait_seconds)
        async with self._lock(key):
            self._cancel_timer(key)
            build = self._running_only(lambda p: podstatus.evicted_status(p, now=self.clock.now()))
            return await self._write_status(key, build)

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
        restarts it in place; ValueError if the pod's restartPolicy would not restart it."""
        key = await self._running(namespace, name, wait_seconds)
        pod = self._pods[key]
        if podstatus.exit_outcome(pod, exit_code, 0, None) != "restart":
            policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
            raise ValueError(
                f"pod {namespace}/{name} has restartPolicy {policy}: a kubelet does not restart a container "
                f"that exits with {exit_code}; use finish()"
            )
        async with self._lock(key):
            self._cancel_timer(key)
            return await self._write_status(
                key, self._running_only(self._restart_builder(exit_code, reason, container))
            )
