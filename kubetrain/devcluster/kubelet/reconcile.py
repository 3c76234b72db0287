"""The pod simulator's per-pod reconcile: each pod's next step (`lifecycle.py`) carried out
against the API server, under the pod's lock (`scheduling.PodTimers`).

A step binds the pod where it fits (`binder.FitBinder`; where it fits nowhere, the pod's
`PodScheduled=False` condition and a `FailedScheduling` Event), writes its status (`status.PodTransitions`)
now or from a timer, or checks what only the API can tell: the ConfigMaps and Secrets its env
references (`envrefs.py`, tried again every 10 s) and the projected volumes it mounts
(`volumes.py`, kept per pod uid in `mounts`). Before any step of a pod on its nodes, a spec
update the kubelet's status does not observe yet gets a status write observing it
(`PodTransitions.observe_generation`). A failed API call is retried with back-off (six
times), then left to the pod's next watch event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet import envrefs, fit, images, podstatus, volumes
from kubetrain.devcluster.kubelet.binder import FitBinder
from kubetrain.devcluster.kubelet.lifecycle import Step, next_step
from kubetrain.devcluster.kubelet.recorder import Activity
from kubetrain.devcluster.kubelet.scheduling import Key, PodTimers
from kubetrain.devcluster.kubelet.status import PodTransitions
from kubetrain.devcluster.kubelet.training import TrainingCode
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

RETRIES = 6  # tries after a failed API call before waiting for the pod's next event


class PodReconciler:
    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        pods: dict[Key, dict[str, Any]],
        timers: PodTimers,
        binder: FitBinder,
        status: PodTransitions,
        training: TrainingCode,
        *,
        scheduler_names: tuple[str, ...],
        default_run_seconds: float | None,
        spawn: Callable[[Awaitable[None]], None],
        activity: Activity | None = None,
        failed_scheduling: Callable[[dict[str, Any], str], None] | None = None,
    ) -> None:
        self._api, self.clock, self._pods = api, clock, pods  # the simulator's watch cache, shared
        self._timers, self._binder, self._status, self.training = timers, binder, status, training
        self.scheduler_names = scheduler_names
        self.default_run_seconds = default_run_seconds
        self._spawn = spawn
        self._activity = activity or Activity()  # the Event writers wait while a reconcile runs
        self.mounts: dict[str, volumes.Mounted] = {}  # pod uid -> its projected volumes
        self._failed_scheduling = failed_scheduling  # records kube-scheduler's FailedScheduling

    def forget(self, uid: str) -> None:
        """The pod is gone: drop its mounted volumes."""
        self.mounts.pop(uid, None)

    async def reconcile(self, key: Key, attempt: int = 0) -> None:
        try:
            with self._activity.working():
                async with self._timers.lock(key):
                    await self._reconcile_locked(key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an API failure: retry with back-off, then wait for the next event
            log.debug("pod %s/%s: %s", *key, exc)
            if attempt < RETRIES:
                await asyncio.sleep(min(5.0, 0.05 * 2**attempt))
                await self.reconcile(key, attempt + 1)

    async def _reconcile_locked(self, key: Key) -> None:
        pod = self._pods.get(key)
        if pod is None:
            return
        step = next_step(
            pod,
            ours=self._status.ours(pod),
            scheduler_names=self.scheduler_names,
            default_run_seconds=self.default_run_seconds,
        )
        if step.action == "finish-deletion":
            await self._status.finish_deletion(key)
        elif step.action == "bind":
            message = await self._binder.bind(self._api(), pod)
            if message is not None:
                await self._unschedulable(key, message, pod)
        elif step.action == "stop":
            self._timers.cancel(key)
        elif step.action != "idle":
            await self._status.observe_generation(key)
            pod = self._pods.get(key) or pod
            if step.problem is not None:
                log.warning("pod %s/%s: %s; running it without simulated behaviour", *key, step.problem)
            if step.action == "run":
                self._run(key, pod, step)
            else:
                await self._pending(key, pod, step)

    async def _unschedulable(self, key: Key, message: str, pod: dict[str, Any]) -> None:
        """The pod fits on no node: its PodScheduled=False condition when that changed, and a
        FailedScheduling Event about the pod as this attempt saw it at every attempt, as
        kube-scheduler's `handleSchedulingFailure` records one before it updates the pod (its
        event library folds the repeats into a series: seriesrecorder.py)."""
        stamp = podstatus.timestamp(self.clock.now())
        if self._failed_scheduling is not None:
            self._failed_scheduling(pod, message)

        def build(pod: dict[str, Any]) -> dict[str, Any] | None:
            return fit.unschedulable_status(pod, message, stamp)

        await self._status.write_status(key, build, kubelet=False)

    async def _pending(self, key: Key, pod: dict[str, Any], step: Step) -> None:
        """A Pending pod on one of the simulator's nodes: started, unless something stops it."""
        uid = step.uid
        if step.init_retry is not None:
            restarts, due = step.init_retry
            delay = (due - self.clock.now()).total_seconds()
            self._timers.schedule(key, ("init-retry", uid, restarts), delay, self._status.retry_init)
            return
        if step.action == "image":
            await self._status.cannot_start(key)
            if "ErrImagePull" in images.waiting_reasons(self._pods.get(key) or pod):
                marker = ("pull-back-off", uid)
                self._timers.schedule(key, marker, images.PULL_BACK_OFF_SECONDS, self._status.pull_back_off)
            return
        api = self._api()
        config = await envrefs.config_error(api, pod)
        if config is not None:  # an env reference it cannot resolve: tried again later
            await self._status.cannot_start(key, config)
            self._timers.schedule(key, ("config-retry", uid), envrefs.RETRY_SECONDS, self._retry_config)
            return
        if uid not in self.mounts and volumes.has_projected_volumes(pod):
            self.mounts[uid] = await volumes.mount(api, pod, self.clock.monotonic())
        if step.behaviour.start_seconds > 0:
            self._timers.schedule(key, ("start", uid), step.behaviour.start_seconds, self._status.start)
        else:
            await self._status.start(key)

    def _run(self, key: Key, pod: dict[str, Any], step: Step) -> None:
        """A running pod: its reports, and the timer that ends its annotated run — or, while a
        container waits out its crash-loop back-off, the timer that runs it again."""
        uid, behaviour = step.uid, step.behaviour
        due = self._status.crash_due(pod)
        if due is not None:
            delay = (due - self.clock.now()).total_seconds()
            self._timers.schedule(key, ("crash-retry", uid, due), delay, self._status.retry_crashed)
            return
        if self.training.starts(pod, behaviour) is not None:
            self._spawn(self.training.loop(key, uid, behaviour.run_seconds))
        if behaviour.run_seconds is not None:
            restarts = podstatus.restart_count(pod)
            started = self._status.run_started(uid, restarts)
            remaining = behaviour.run_seconds - (self.clock.monotonic() - started)
            self._timers.schedule(key, ("exit", uid, restarts), remaining, self._run_ended)

    async def _retry_config(self, key: Key) -> None:
        """The kubelet's next try at a container whose env it could not resolve (under the lock)."""
        try:
            await self._reconcile_locked(key)
        except Exception as exc:  # an API failure: the next pod event or try looks again
            log.debug("pod %s/%s: %s", *key, exc)
            pod = self._pods.get(key)
            if pod is not None:
                uid = str(pod["metadata"].get("uid", ""))
                self._timers.schedule(key, ("config-retry", uid), envrefs.RETRY_SECONDS, self._retry_config)

    async def _run_ended(self, key: Key) -> None:
        """The containers' run is over: a reporting pod's last report first, then they stop."""
        await self.training.run_ends(key, self.default_run_seconds)
        await self._status.run_ended(key)
