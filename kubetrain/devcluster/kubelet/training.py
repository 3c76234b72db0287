"""The training code a simulated pod runs, as far as the control plane can see it: a reporting
pod's rank 0 POSTs its progress to the training-progress endpoint like the Kubeflow SDK
(`reporter.py` has the wire format and the HTTPS client) — when its containers start, then
every `interval` (the SDK's 5 s throttle) while they run, and, when its run ends in success, a
last report of 100 % just before the containers stop (the SDK's
`update_trainjob_status(progress_percent=100)` at the end of training).

`PodSimulator` (simulator.py) owns the pods, their clock and their projected files; this module
only plays the reports from them."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kubetrain.devcluster.kubelet import podstatus, reporter
from kubetrain.devcluster.kubelet.behaviour import Behaviour, exit_outcome
from kubetrain.devcluster.kubelet.scheduling import Key
from kubetrain.devcluster.kubelet.statuswrite import pod_phase
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

Files = Callable[[str, str], Awaitable[dict[str, str]]]  # (namespace, name) -> the pod's files
RunStarted = Callable[[str, int], float]  # (uid, restarts) -> when the containers' run began


class TrainingCode:
    def __init__(
        self,
        pods: dict[Key, dict[str, Any]],
        clock: Clock,
        files: Files,
        run_started: RunStarted,
        *,
        report_all: bool,
        interval: float,
    ) -> None:
        self._pods, self._clock, self._files, self._run_started = pods, clock, files, run_started
        self.report_all = report_all  # every rank-0 pod with the endpoint's env, annotated or not
        self.interval = interval
        self._reporter = reporter.Reporter()
        self._running: set[str] = set()  # uids of pods whose reporting loop runs
        self.statuses: dict[Key, int] = {}  # the HTTP status of each pod's last report
        self.counts: dict[Key, int] = {}  # reports each pod sent

    def forget(self, key: Key) -> None:
        """The pod is gone: drop what its reports left (a recreated pod starts afresh)."""
        self.statuses.pop(key, None)
        self.counts.pop(key, None)

    def remembered(self) -> int:
        """Pods with a reporting loop or a report on record."""
        return len(self._running) + len(self.statuses.keys() | self.counts.keys())

    def starts(self, pod: dict[str, Any], behaviour: Behaviour) -> str | None:
        """The uid of a running pod whose reporting loop is to start now (None: it reports
        nothing, or its loop runs already)."""
        uid = str(pod["metadata"].get("uid", ""))
        if uid in self._running or not reporter.wants_report(pod, behaviour.report_progress, self.report_all):
            return None
        self._running.add(uid)
        return uid

    async def loop(self, key: Key, uid: str, run_seconds: float | None) -> None:
        """The pod's reports until its containers stop running."""
        try:
            while True:
                pod = self._pods.get(key)
                if (
                    pod is None
                    or pod["metadata"].get("uid") != uid
                    or pod["metadata"].get("deletionTimestamp")
                    or pod_phase(pod) != "Running"
                    or not podstatus.first_running(pod)
                ):
                    return  # gone, stopping, or its training code not running (a crash-loop back-off)
                started = self._run_started(uid, podstatus.restart_count(pod))
                await self.report(key, pod, self._clock.monotonic() - started, run_seconds)
                await self._clock.sleep(self.interval)
        finally:
            self._running.discard(uid)

    async def run_ends(self, key: Key, default_run_seconds: float | None) -> None:
        """The pod's run is over: its last report, when it reports and its training succeeded."""
        pod = self._pods.get(key)
        if pod is None or pod_phase(pod) != "Running" or pod["metadata"].get("uid") not in self._running:
            return
        b = Behaviour.from_pod(pod, default_run_seconds)
        ends = exit_outcome(pod, b.exit_code, podstatus.restart_count(pod), b.restarts_before_exit)
        if ends == "Succeeded" and b.reason is None and b.run_seconds:
            await self.report(key, pod, b.run_seconds, b.run_seconds)

    async def report(self, key: Key, pod: dict[str, Any], elapsed: float, run_seconds: float | None) -> None:
        """One report (nothing when the pod has no projected token to send it with)."""
        with contextlib.suppress(KeyError):  # no projected volume
            target = reporter.endpoint(pod, await self._files(*key))
            if target is not None:
                body = reporter.report_body(elapsed, run_seconds, self._clock.now())
                self.statuses[key] = status = await self._reporter.post(target, body)
                self.counts[key] = self.counts.get(key, 0) + 1
                log.debug("pod %s/%s reported %s: %s", *key, body["trainerStatus"], status)

    async def close(self) -> None:
        await self._reporter.close()
