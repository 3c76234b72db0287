"""The pod simulator's event recorders: one per simulated node's kubelet (component `kubelet`,
host the node's name, correlated: `recorder.py`) and kube-scheduler's (`default-scheduler`), each
with its own queue, writer, correlator and rate limit, as each is its own process on a cluster;
their writes wait for the simulator's pod work in flight (`activity`, `recorder.Activity`).

- `pod_status_written(old, new)`: the kubelet of the pod's node records what its status change
  says it did (`podevents.container_events`: Pulled/Created/Started, the pull and config
  failures, BackOff, Killing);
- `scheduled(pod, node)`: kube-scheduler's `Scheduled` "Successfully assigned NS/NAME to NODE"
  (schedule_one.go `bindingCycle`, action `Binding`);
- `failed_scheduling(pod, message)`: its `FailedScheduling` Warning with the FitError message
  (`handleSchedulingFailure`, action `Scheduling`), at every attempt that places the pod nowhere.

kube-scheduler 1.36 records both through client-go's tools/events library, as events.k8s.io/v1
Events (`seriesrecorder.py`: reportingController `default-scheduler`, reportingInstance
`default-scheduler-<hostname>`, repeats folded into `series`), which kube-apiserver also serves as
the core/v1 Events `kubectl describe` lists. The kubelets keep client-go's core/v1 recorder.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet.podevents import NORMAL, WARNING, PodEvent, container_events
from kubetrain.devcluster.kubelet.recorder import Activity, Recorder
from kubetrain.devcluster.kubelet.seriesrecorder import SeriesRecorder
from kubetrain.kube.clock import Clock

Obj = dict[str, Any]
KUBELET = "kubelet"
SCHEDULER = "default-scheduler"


class EventRecorders:
    def __init__(self, api: Callable[[], RawApi], clock: Clock, node_names: Iterable[str]) -> None:
        self.activity = Activity()  # the simulator's pod work in flight: writes wait for none
        self.kubelets = {
            node: Recorder(api, clock, KUBELET, host=node, activity=self.activity) for node in node_names
        }
        self.scheduler = SeriesRecorder(api, clock, SCHEDULER, activity=self.activity)

    def writers(self) -> list[Awaitable[None]]:
        """The writers to run (until cancelled)."""
        return [r.run() for r in (*self.kubelets.values(), self.scheduler)]

    async def flush(self) -> None:
        """Wait until every recorded Event has been written (or failed)."""
        for recorder in (self.scheduler, *self.kubelets.values()):
            await recorder.flush()

    def dropped(self) -> int:
        """Events dropped because a recorder's queue was full."""
        return sum(r.dropped for r in (self.scheduler, *self.kubelets.values()))

    def pod_status_written(self, old: Obj, new: Obj) -> None:
        recorder = self.kubelets.get(str((new.get("spec") or {}).get("nodeName") or ""))
        if recorder is None:
            return
        for event in container_events(old, new):
            recorder.record(new, event)

    def scheduled(self, pod: Obj, node: str) -> None:
        meta = pod.get("metadata") or {}
        message = f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} to {node}"
        self.scheduler.record(pod, PodEvent(NORMAL, "Scheduled", message), action="Binding")

    def failed_scheduling(self, pod: Obj, message: str) -> None:
        self.scheduler.record(pod, PodEvent(WARNING, "FailedScheduling", message), action="Scheduling")
