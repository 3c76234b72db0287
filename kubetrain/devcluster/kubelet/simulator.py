"""PodSimulator: a simulated kubelet (and minimal scheduler) that is an ordinary API client.

It talks to any API server through a kubeconfig (devcluster, or a real cluster whose nodes have
no kubelets), with plain-dict bodies:

- registers `nodes` Ready Node objects named `<node_prefix>-<i>` if absent, and renews their
  Leases in `kube-node-lease` every 10 s (`heartbeat.py`; so a node controller keeps them Ready); watches
  the Nodes (the scheduler's view of them: labels, taints, cordon, allocatable);
- watches pods (all namespaces, or `namespace`: its pods only are run and bound); binds unscheduled pods whose
  `spec.schedulerName` is in `scheduler_names` (default `("default-scheduler",)`; use `()` on a
  cluster that has a scheduler) to one of its nodes where they fit (`binder.py`: cordons and
  taints against the pod's tolerations, nodeSelector, required node affinity, resource
  requests, the `pods` count; round-robin over the fitting nodes) via POST `pods/NAME/binding` —
  gangs are NOT its concern; a pod that fits nowhere stays
  Pending with `PodScheduled=False`, reason `Unschedulable`, and a `FailedScheduling` Event, and is
  tried again when a pod ends or is deleted, when one of its nodes changes, and at every node
  heartbeat; a pod with
  `spec.schedulingGates` is not bound until they are all removed (kube-scheduler's rule: it
  stays Pending, e.g. while Kueue holds it);
- runs every pod bound to one of its nodes: Pending → Running (containers running and ready,
  podIP, startTime, Ready conditions) → Succeeded/Failed, writing the `status` subresource with
  the pod's resourceVersion and re-reading + retrying on 409; each status observes the pod's
  generation (`status.observedGeneration` and its own conditions'), and a spec update of a pod it
  runs gets the status written again for the new generation;
- starts no container from an image it cannot use (`images.py`: an invalid reference, a registry
  under `.invalid`) or whose env references a missing ConfigMap/Secret or key (`envrefs.py`,
  `CreateContainerConfigError`, tried again every 10 s): the pod stays Pending, the container
  waiting with the kubelet's reason;
- mounts projected volumes before starting a pod (`volumes.py`): a `serviceAccountToken` source
  gets a pod-bound token from the TokenRequest API, ConfigMap/Secret sources their keys; a failed
  mount keeps the pod Pending; `files(ns, name)` shows what a container reads;
- finishes graceful deletions like a kubelet: a pod with deletionTimestamp gets its containers
  terminated (exit 143, phase Failed) and is then DELETEd with gracePeriodSeconds=0.
- runs kube-controller-manager's taint-eviction controller (`controllers/taintevict.py`) and the
  node lifecycle controller's taints (`controllers/nodelifecycle.py`) and health monitor
  (`controllers/nodehealth.py`: a node without Lease renewal for 50 s goes Unknown) over what it watches,
  and the pod garbage collector (`controllers/podgc.py`: force-deletes the pods of deleted and
  out-of-service nodes; `pod_gc.threshold` is `--terminated-pod-gc-threshold`);
  `node_controllers=False` on a cluster that runs its own. The kubelet, scheduler and these
  controllers share one pod watch and one Node watch (`pod_watch`, `node_watch`:
  `kubetrain.devcluster.sharedwatch`); the pod watch is of every namespace while the pod GC runs,
  even for a simulator given a `namespace`, since the collector looks at every pod.

Per-pod behaviour comes from annotations (names and meaning in `kubetrain.devcluster.kubelet.behaviour`):
`sim.kubetrain.io/run-seconds`, `.../exit-code`, `.../reason` (e.g. OOMKilled; Evicted → eviction),
`.../restarts-before-exit`, `.../start-seconds`, `.../report-progress` (the running pod's rank 0
reports training progress to its KUBEFLOW_TRAINER_SERVER_URL like the Kubeflow SDK, `training.py`;
`report_progress=True` makes every pod with that env report, `report_interval` replaces the SDK's
5 s). Without run-seconds a pod stays Running until the
test API says otherwise, unless the simulator was given `default_run_seconds` (`kubetrain dev`).
On exit the pod's restartPolicy decides like a kubelet: Never → terminal; OnFailure → restart in
place unless the exit code is 0; Always → restart in place (restartCount + 1, lastState.terminated).
A restart waits out the kubelet's crash-loop back-off (`crashloop.py`): at once after the first
exit, then 10 s doubling to 300 s, reset by a run of over 10 minutes. Meanwhile the container
waits with reason `CrashLoopBackOff` and the pod is Running but not Ready.

Test API (each waits, up to `wait_seconds`, for the pod to be Running on a simulated node):
`finish(ns, name, exit_code=0, reason=None)` — every container exits, the pod becomes Succeeded
(exit 0) or Failed, whatever its restartPolicy; `evict(ns, name)` — kubelet eviction: Failed,
reason Evicted, DisruptionTarget condition; `restart_container(ns, name, exit_code=137,
container=None)` — an in-place restart, at once: the exit and the restart after its back-off in
one step, the back-off moved on as that restart moves it (ValueError if the restartPolicy would
not restart);
`wait_for(ns, name, predicate)` / `wait_for_phase(ns, name, phase)`; `pod(ns, name)` (last seen);
`stop_node(name)` — the node's kubelet stops: its Lease is not renewed (the node goes Unknown
after the grace period) and its pods are no longer advanced (statuses freeze, a deleted pod stays
Terminating); `start_node(name)` — it is back: posts Ready and carries on (finishes deletions).

Durations run on an injectable `kubetrain.kube.clock.Clock` (tests pass a FakeClock and advance
it). Start it with `async with PodSimulator(kubeconfig) as sim:` or start()/stop().

Where it lives: this module is the simulator (nodes, the pod watch, the test API's volume and
memory views); `testapi` the test API's per-pod waits and actions (a mixin of PodSimulator);
`lifecycle` decides each pod's next step (pure), `reconcile` carries it out; `scheduling` holds
the per-pod locks and timers, `binder` and `fit` the scheduler, `status` the status transitions and
their conflict-retrying writes, `podstatus` the pure status builders (`crashstatus` those of
in-place restarts, `crashloop` the kubelet's crash-loop back-off); `nodes` Node registration
and Lease heartbeats; `kubetrain.devcluster.client` is the raw API client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from kubetrain.devcluster.apiserver.base.background import cancel_all
from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.controllers.nodetaints import NodeTaints
from kubetrain.devcluster.controllers.podgc import PodGC
from kubetrain.devcluster.controllers.taintevict import TaintEviction
from kubetrain.devcluster.kubelet import reporter, volumes
from kubetrain.devcluster.kubelet.binder import FitBinder
from kubetrain.devcluster.kubelet.eventrecorders import EventRecorders
from kubetrain.devcluster.kubelet.git import SimulatedGit
from kubetrain.devcluster.kubelet.heartbeat import HEARTBEAT_SECONDS, Heartbeats
from kubetrain.devcluster.kubelet.nodes import register_nodes
from kubetrain.devcluster.kubelet.reconcile import PodReconciler
from kubetrain.devcluster.kubelet.scheduling import Key, PodTimers, pod_key
from kubetrain.devcluster.kubelet.status import TERMINATION_EXIT_CODE, PodTransitions
from kubetrain.devcluster.kubelet.statuswrite import StatusBuilder, rv_older
from kubetrain.devcluster.kubelet.testapi import PodTestApi
from kubetrain.devcluster.kubelet.training import TrainingCode
from kubetrain.devcluster.sharedwatch import SharedWatch
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock

__all__ = ["HEARTBEAT_SECONDS", "TERMINATION_EXIT_CODE", "Key", "PodSimulator", "StatusBuilder"]

log = logging.getLogger(__name__)


class PodSimulator(PodTestApi):
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
        report_progress: bool = False,
        report_interval: float = reporter.SDK_INTERVAL_SECONDS,
        node_controllers: bool = True,
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
        self._tasks: set[asyncio.Task[None]] = set()
        self._timers = PodTimers(clock, self._current_uid)
        # kube-scheduler's and each node's kubelet's Events (eventrecorders.py)
        self.events = EventRecorders(lambda: self.api, clock, self.node_names)
        self._binder = FitBinder(self.node_names, self._pods, self.events.scheduled)
        # The git remotes code-sync init containers fetch from (tests push branches, fail repos).
        self.git = SimulatedGit()
        self._status = PodTransitions(
            lambda: self.api,
            clock,
            self._pods,
            self._host_ips,
            self._timers,
            default_run_seconds,
            self.git,
            self.events.pod_status_written,
            self.events.activity,
        )
        self._synced = asyncio.Event()
        # The training code of reporting pods (training.py).
        self.training = TrainingCode(
            self._pods,
            clock,
            self.files,
            self._status.run_started,
            report_all=report_progress,
            interval=report_interval,
        )
        self.report_statuses = self.training.statuses  # the HTTP status of each pod's last report
        self.report_counts = self.training.counts  # reports each pod sent
        self._reconciler = PodReconciler(
            lambda: self.api,
            clock,
            self._pods,
            self._timers,
            self._binder,
            self._status,
            self.training,
            scheduler_names=self.scheduler_names,
            default_run_seconds=default_run_seconds,
            spawn=self._spawn,
            activity=self.events.activity,
            failed_scheduling=self.events.failed_scheduling,
        )
        self._mounts = self._reconciler.mounts  # pod uid -> its projected volumes
        # kube-controller-manager's taint-eviction and node lifecycle controllers
        self.evictions = TaintEviction(lambda: self.api, clock, self._pods) if node_controllers else None
        self._node_taints = NodeTaints(lambda: self.api, clock) if node_controllers else None
        # One pod watch and one Node watch (sharedwatch.py) feed the kubelet, the scheduler and
        # the controllers; the pod watch is cluster-wide while the pod GC runs (it looks at every
        # pod), the simulator itself is handed only its namespace's pods.
        pods_path = (
            f"/api/v1/namespaces/{namespace}/pods" if namespace and not node_controllers else "/api/v1/pods"
        )
        self.pod_watch = SharedWatch(pods_path)
        self.pod_watch.subscribe(self._observe, self._relisted, namespace=namespace)
        self.node_watch = SharedWatch("/api/v1/nodes")
        self.node_watch.subscribe(self._observe_node, self._relisted_nodes)
        watches = (self.pod_watch, self.node_watch)
        self.pod_gc = PodGC(lambda: self.api, clock, watches=watches) if node_controllers else None
        node_watch = self.node_watch if node_controllers else None
        self.heartbeats = Heartbeats(lambda: self.api, clock, self._host_ips, node_watch)

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> PodSimulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._api = await RawApi.from_kubeconfig(self.kubeconfig_path, self._user_agent)
        for writer in self.events.writers():
            self._spawn(writer)
        await register_nodes(self.api, self._host_ips, self.clock.now())
        self._spawn(self.node_watch.run(self.api))
        await asyncio.wait_for(self._binder.nodes_synced.wait(), 30)
        self._spawn(self.pod_watch.run(self.api))
        self._spawn(self.heartbeats.loop(self._retry_unschedulable))
        if self.pod_gc is not None:
            self._spawn(self.pod_gc.loop())
        await asyncio.wait_for(self._synced.wait(), 30)

    async def stop(self) -> None:
        await cancel_all([*self._tasks, *self._timers.tasks()])
        self._tasks.clear()
        self._timers.clear()
        if self.evictions is not None:
            await self.evictions.stop()
        await self.training.close()
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

    def stop_node(self, name: str) -> None:
        """The node's kubelet stops: no Lease renewal, its pods' statuses freeze."""
        self.heartbeats.stop(name)
        for key in self._on_node(name):
            self._timers.cancel(key)

    async def start_node(self, name: str) -> None:
        """The node's kubelet is back: it posts Ready and carries on with its pods."""
        await self.heartbeats.start(name)
        for key in self._on_node(name):
            self._spawn(self._reconciler.reconcile(key))

    def _on_node(self, name: str) -> list[Key]:
        return [k for k, p in self._pods.items() if (p.get("spec") or {}).get("nodeName") == name]

    async def _relisted_nodes(self, nodes: list[dict[str, Any]]) -> None:
        if self.evictions is not None and self._node_taints is not None:
            for node in nodes:
                self.evictions.observe_node("ADDED", node)
                await self._node_taints.observe("ADDED", node)
        if self._binder.relist_nodes(nodes):
            self._retry_unschedulable()

    async def _observe_node(self, kind: str, node: dict[str, Any]) -> None:
        if self.evictions is not None and self._node_taints is not None:
            self.evictions.observe_node(kind, node)
            await self._node_taints.observe(kind, node)
        if self._binder.observe_node(kind, node):
            self._retry_unschedulable()  # new labels, taints, cordon or allocatable

    async def _relisted(self, pods: list[dict[str, Any]]) -> None:
        seen = {pod_key(pod) for pod in pods}
        for pod in pods:
            await self._observe("ADDED", pod)
        for key in [k for k in self._pods if k not in seen]:
            await self._observe("DELETED", self._pods[key])
        self._synced.set()

    async def _observe(self, kind: str, pod: dict[str, Any]) -> None:
        self.events.activity.touch()  # a pod event: pod work, the Event writers wait for a pause
        key = pod_key(pod)
        old = self._pods.get(key)
        if kind != "DELETED" and old is not None and rv_older(pod, old):
            return
        if self._binder.observe(key, pod, kind == "DELETED"):
            self._retry_unschedulable(key)  # room freed: the pods that fit nowhere are tried again
        if kind == "DELETED":
            self._pods.pop(key, None)
            self._timers.cancel(key)
            self._status.forget(str((pod.get("metadata") or {}).get("uid", "")))
            self._reconciler.forget(str((pod.get("metadata") or {}).get("uid", "")))
            self.training.forget(key)
        else:
            self._pods[key] = pod
        if self.evictions is not None:
            self.evictions.observe_pod(kind, pod)
        async with self._changed:
            self._changed.notify_all()
        if kind != "DELETED" and (pod.get("spec") or {}).get("nodeName") not in self.heartbeats.stopped:
            self._spawn(self._reconciler.reconcile(key))

    def _retry_unschedulable(self, changed: Key | None = None) -> None:
        for key in self._binder.retry_keys():
            if key != changed:
                self._spawn(self._reconciler.reconcile(key))

    def _current_uid(self, key: Key) -> str | None:
        pod = self._pods.get(key)
        return None if pod is None else str(pod["metadata"].get("uid", ""))

    # -- test API -------------------------------------------------------------------------------

    async def files(self, namespace: str, name: str, container: str | None = None) -> dict[str, str]:
        """The projected-volume files (service-account tokens, ConfigMap/Secret keys) a process
        in `container` (default: the first) of a started pod reads, by absolute path; a token
        past 80 % of its lifetime is requested anew first, as the kubelet rotates it."""
        pod = self._pods.get((namespace, name))
        uid = None if pod is None else str(pod["metadata"].get("uid", ""))
        if pod is None or uid not in self._mounts:
            raise KeyError(f"pod {namespace}/{name} has no mounted projected volumes")
        mounted = self._mounts[uid]
        if mounted.refresh_at is not None and self.clock.monotonic() >= mounted.refresh_at:
            mounted = self._mounts[uid] = await volumes.mount(self.api, pod, self.clock.monotonic())
        return volumes.container_files(pod, mounted, container)

    def remembered(self) -> dict[str, int]:
        """How many pods each part of the simulator keeps state for; every count returns to 0
        once the pods are gone (the watch cache, per-pod locks and timers, projected volumes,
        what the kubelet remembers per pod, training reports, the scheduler's unschedulable
        and assumed pods)."""
        return {
            "pods": len(self._pods),
            "locks_and_timers": self._timers.tracked(),
            "mounts": len(self._mounts),
            "kubelet": self._status.remembered(),
            "training": self.training.remembered(),
            "scheduler": self._binder.remembered(),
        }
