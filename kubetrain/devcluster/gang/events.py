"""The simulated gang schedulers' Event recorders, as each real scheduler records its Events.

Volcano (vc-scheduler) records through client-go's `record.EventRecorder`: core/v1 Events with
`source.component` (and `reportingComponent`) its scheduler name — `volcano`, or `volcano` too
when it serves several names (`util.GenerateComponentName`) — repeats folded by the
EventCorrelator into one Event's `count` (`kubetrain.devcluster.kubelet.recorder.Recorder`).

scheduler-plugins' coscheduling plugin runs inside kube-scheduler, whose profile records through
client-go's tools/events library: events.k8s.io/v1 Events, `reportingController` the profile's
scheduler name (the pod's `schedulerName`), `reportingInstance` `<name>-<hostname>`, `action`
`Scheduling` (FailedScheduling) or `Binding` (Scheduled), repeats folded into a series
(`kubetrain.devcluster.kubelet.seriesrecorder.SeriesRecorder`).

Both write off the scheduling loop (the recorders' queues and writers); `flush` waits for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.gang.crds import VOLCANO
from kubetrain.devcluster.kubelet.podevents import NORMAL, WARNING, PodEvent
from kubetrain.devcluster.kubelet.recorder import Recorder
from kubetrain.devcluster.kubelet.seriesrecorder import SeriesRecorder
from kubetrain.kube.clock import Clock

Obj = dict[str, Any]
VOLCANO_COMPONENT = "volcano"  # Volcano's defaultSchedulerName
ACTIONS = {"FailedScheduling": "Scheduling", "Scheduled": "Binding"}  # kube-scheduler's actions


class GangEvents:
    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        gang_scheduler: str,
        scheduler_names: Sequence[str],
        *,
        hostname: str | None = None,
    ) -> None:
        self.volcano = gang_scheduler == VOLCANO
        self._recorders: dict[str, Recorder] = {}
        if self.volcano:
            component = scheduler_names[0] if len(scheduler_names) == 1 else VOLCANO_COMPONENT
            self._recorders[""] = Recorder(api, clock, component)
        else:
            for name in scheduler_names:
                self._recorders[name] = SeriesRecorder(api, clock, name, hostname=hostname)
        self._default = next(iter(self._recorders.values()))

    async def run(self) -> None:
        """The recorders' writers, until cancelled."""
        await asyncio.gather(*(r.run() for r in self._recorders.values()))

    async def flush(self) -> None:
        """Wait until every recorded Event has been written (or failed)."""
        for recorder in self._recorders.values():
            await recorder.flush()

    def record(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """One Event about `obj` (a pod, or a Volcano PodGroup carrying apiVersion and kind)."""
        event = PodEvent(type_, reason, message)
        if self.volcano:
            self._default.record(obj, event)
            return
        name = str((obj.get("spec") or {}).get("schedulerName") or "")
        self._recorders.get(name, self._default).record(obj, event, action=ACTIONS.get(reason, ""))

    def scheduled(self, pod: Obj, node: str) -> None:
        """`Scheduled` after a binding: `Successfully assigned <ns>/<name> to <node>`."""
        meta = pod.get("metadata") or {}
        message = f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} to {node}"
        self.record(pod, NORMAL, "Scheduled", message)

    def failed_scheduling(self, pod: Obj, message: str) -> None:
        self.record(pod, WARNING, "FailedScheduling", message)
