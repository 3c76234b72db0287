"""GangSchedulerSimulator: plays Volcano or scheduler-plugins (coscheduling) for the dev stack.

Like `PodSimulator` it is an ordinary API client (plain dicts over a kubeconfig): it watches the
PodGroups of one gang API and all pods, and after every change runs one scheduling cycle:

Volcano (`scheduling.volcano.sh/v1beta1`; pods with `schedulerName: volcano`, group from the
annotation `scheduling.k8s.io/group-name`):
- a new PodGroup (phase "") becomes `Pending`;
- enqueue: a `Pending` group becomes `Inqueue` when the cluster's free capacity (every node's
  `allocatable`, minus the requests of bound unfinished pods, minus what earlier `Inqueue` groups
  reserve) covers its `minResources` and `minMember` pod slots; otherwise it stays `Pending` with
  an `Unschedulable` condition, reason `NotEnoughResources`;
- allocate: the unbound pods of an `Inqueue`/`Running` group are placed on nodes through
  kube-scheduler's filters (`filters.py`: cordons, taints, node selector and required node
  affinity, host ports, resources, topology spread, inter-pod affinity) and bound through
  `pods/NAME/binding` only when bound + succeeded + placed pods reach `minMember` — all or
  nothing. Too few pods: condition reason `NotEnoughTasks`; a member no node takes: reason
  `NotEnoughResources` with Volcano's task histogram, and that pod's `PodScheduled=False`
  condition (reason `Unschedulable`) names each node's reason;
- status: `Running` once bound-or-running + succeeded members reach `minMember` (Volcano's
  `jobStatus` rule), and `running`/`succeeded`/`failed` counts.

scheduler-plugins (`scheduling.x-k8s.io/v1alpha1`; pods labelled `scheduling.x-k8s.io/pod-group`
with the scheduler-plugins scheduler name) — the PodGroup controller's phases "" → `Pending` →
`PreScheduling` (minMember pods exist) and the coscheduling plugin's PreFilter/Permit: pods are
bound all-or-nothing once minMember exist, `minResources` fits and every member passes the
filters (a member no node takes gets kube-scheduler's `PodScheduled=False` message and nothing of
the gang is bound); `scheduled` counts bindings
(`Scheduling`/`Scheduled`), then `Running` (running + succeeded ≥ minMember), `Finished`
(succeeded ≥ minMember) or `Failed`.

A pod of ours without a group is bound alone when it fits. Capacity is `nodes` x `allocatable`
(default: what `PodSimulator` reports for its Nodes); the filters read the Nodes named `nodes`
as a watch of Nodes shows them (a node not seen yet takes no pod). Binding only: `PodSimulator` (with
`scheduler_names=("default-scheduler",)`) runs the pods once bound. Cycles are serial and
event-driven (no timers), so tests wait on observable state, never on time.

Events (`events`, written off the loop; `await sim.events.flush()` waits for them): Volcano's
core/v1 `FailedScheduling` (with each change of a member's `PodScheduled` condition),
`Unschedulable`/`Scheduled` on the PodGroup and `Scheduled` on a bound pod, from `volcano`;
scheduler-plugins kube-scheduler's events.k8s.io/v1 `FailedScheduling` (each failed attempt)
and `Scheduled`, reportingController the scheduler's name.

Where it lives: this module is the simulator (watch caches, the scheduling loop, bindings and
status writes); `phases` decides each PodGroup's status for Volcano and scheduler-plugins,
`filters` places a gang through kube-scheduler's filters, `resources` holds the resource
arithmetic and node capacity, `crds` the PodGroup CRDs, `events` the Event recorders and
`volcanofit` Volcano's scheduling texts.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any

from kubetrain.devcluster.apiserver.base.background import cancel_all
from kubetrain.devcluster.client import ApiError, RawApi, list_then_watch
from kubetrain.devcluster.gang.crds import SCHEDULER_PLUGINS, VOLCANO, podgroup_crd
from kubetrain.devcluster.gang.events import GangEvents
from kubetrain.devcluster.gang.filters import Cluster, NoFit, Placed, pod_index, wants_namespace_labels
from kubetrain.devcluster.gang.phases import (
    Scheduling,
    coscheduling_rejection,
    coscheduling_status,
    group_min_member,
    group_min_need,
    now_timestamp,
    obj_key,
    pod_phase,
    volcano_status,
)
from kubetrain.devcluster.gang.resources import (
    TERMINAL,
    Resources,
    add,
    free_by_node,
    pod_requests,
    resources,
)
from kubetrain.devcluster.kubelet import fit, nodeobjects
from kubetrain.kube.clock import Clock, SystemClock

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
SCHEDULER_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_SCHEDULER_NAMES = {VOLCANO: ("volcano",), SCHEDULER_PLUGINS: ("scheduler-plugins-scheduler",)}
BINDINGS_KEPT = 10_000  # the binding log (a test API) keeps this many, so churn does not grow it

__all__ = ["GangSchedulerSimulator", "pod_requests", "podgroup_crd"]


def _rv(obj: Obj) -> int:
    rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    return int(rv) if rv.isdigit() else -1


class GangSchedulerSimulator:
    def __init__(
        self,
        kubeconfig_path: str,
        gang_scheduler: str,
        *,
        node_names: Iterable[str],
        allocatable: Mapping[str, str] | None = None,
        scheduler_names: tuple[str, ...] | None = None,
        user_agent: str | None = None,
        bindings_kept: int = BINDINGS_KEPT,
        clock: Clock | None = None,
        hostname: str | None = None,
    ) -> None:
        crd = podgroup_crd(gang_scheduler)  # ValueError for an unknown gang scheduler
        spec = crd["spec"]
        self.gang_scheduler = gang_scheduler
        self.kubeconfig_path = kubeconfig_path
        self.group_path = f"/apis/{spec['group']}/{spec['versions'][0]['name']}"
        self.scheduler_names = scheduler_names or DEFAULT_SCHEDULER_NAMES[gang_scheduler]
        self.node_names = list(node_names)
        self.allocatable = resources(allocatable or nodeobjects.NODE_CAPACITY)
        self._user_agent = user_agent or f"kubetrain-gang-simulator ({gang_scheduler})"
        self._api: RawApi | None = None
        self._groups: dict[Key, Obj] = {}
        self._pods: dict[Key, Obj] = {}
        self._nodes: dict[str, Obj] = {}  # the watch's Nodes, by name
        self._cluster = Cluster([], pod_index((), {}), {}, {}, gang_scheduler == VOLCANO)
        self._assumed: dict[str, tuple[str, Resources]] = {}  # pod uid -> (node, requests) bound by us
        self._wake = asyncio.Event()
        self._synced = {"groups": asyncio.Event(), "pods": asyncio.Event(), "nodes": asyncio.Event()}
        self._tasks: set[asyncio.Task[None]] = set()
        self._session = uuid.uuid4().hex[:8]
        self.cycles = 0
        # (namespace, pod, node) in binding order, the newest `bindings_kept` (pods gone included)
        self.bindings: deque[tuple[str, str, str]] = deque(maxlen=bindings_kept)
        self.events = GangEvents(
            lambda: self.api, clock or SystemClock(), gang_scheduler, self.scheduler_names, hostname=hostname
        )
        self._scheduling = Scheduling(
            self._cluster_place,
            self._is_bound,
            self._bind,
            self._unschedulable,
            self._event,
            lambda: len(self._cluster.nodes),
            self._session,
        )

    async def __aenter__(self) -> GangSchedulerSimulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._api = await RawApi.from_kubeconfig(self.kubeconfig_path, self._user_agent)
        self._spawn(
            list_then_watch(self._api, f"{self.group_path}/podgroups", self._on_group, self._groups_listed)
        )
        self._spawn(list_then_watch(self._api, "/api/v1/pods", self._on_pod, self._pods_listed))
        self._spawn(list_then_watch(self._api, "/api/v1/nodes", self._on_node, self._nodes_listed))
        self._spawn(self._loop())
        self._spawn(self.events.run())
        for event in self._synced.values():
            await asyncio.wait_for(event.wait(), 30)

    async def stop(self) -> None:
        await cancel_all(self._tasks)
        self._tasks.clear()
        if self._api is not None:
            await self._api.close()
            self._api = None

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def api(self) -> RawApi:
        if self._api is None:
            raise RuntimeError("GangSchedulerSimulator is not started")
        return self._api

    def group(self, namespace: str, name: str) -> Obj | None:
        """The PodGroup as last seen by the simulator's watch."""
        return self._groups.get((namespace, name))

    def node(self, name: str) -> Obj | None:
        """The Node as last seen by the simulator's watch."""
        return self._nodes.get(name)

    # -- caches ---------------------------------------------------------------------------------

    @staticmethod
    def _store(cache: dict[Key, Obj], kind: str, obj: Obj) -> None:
        key = obj_key(obj)
        if kind == "DELETED":
            cache.pop(key, None)
        elif key not in cache or _rv(obj) >= _rv(cache[key]):
            cache[key] = obj

    def _typed(self, group: Obj) -> Obj:
        """The PodGroup with its apiVersion and kind (an Event's reference names them)."""
        return {"apiVersion": self.group_path.removeprefix("/apis/"), "kind": "PodGroup", **group}

    async def _on_group(self, kind: str, obj: Obj) -> None:
        self._store(self._groups, kind, self._typed(obj))
        self._wake.set()

    async def _on_pod(self, kind: str, obj: Obj) -> None:
        self._store(self._pods, kind, obj)
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        if kind == "DELETED" or (obj.get("spec") or {}).get("nodeName"):
            self._assumed.pop(uid, None)  # the watch now shows (or no longer needs) our binding
        self._wake.set()

    async def _on_node(self, kind: str, obj: Obj) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        if kind == "DELETED":
            self._nodes.pop(name, None)
        else:
            self._nodes[name] = obj
        self._wake.set()

    async def _nodes_listed(self, items: list[Obj]) -> None:
        self._nodes = {str(n["metadata"]["name"]): n for n in items}
        self._synced["nodes"].set()
        self._wake.set()

    async def _relist(self, cache: dict[Key, Obj], items: list[Obj], synced: str) -> None:
        cache.clear()
        cache.update({obj_key(obj): obj for obj in items})
        self._synced[synced].set()
        self._wake.set()

    async def _groups_listed(self, items: list[Obj]) -> None:
        await self._relist(self._groups, [self._typed(i) for i in items], "groups")

    async def _pods_listed(self, items: list[Obj]) -> None:
        await self._relist(self._pods, items, "pods")

    # -- the scheduling loop --------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._cycle()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an API failure: try again after a short back-off
                log.warning("gang scheduling cycle failed: %s", exc)
                await asyncio.sleep(0.2)
                self._wake.set()
            self.cycles += 1

    def _ours(self, pod: Obj) -> bool:
        spec = pod.get("spec") or {}
        return (spec.get("schedulerName") or "default-scheduler") in self.scheduler_names

    def _group_of(self, pod: Obj) -> str | None:
        meta = pod.get("metadata") or {}
        if self.gang_scheduler == VOLCANO:
            return (meta.get("annotations") or {}).get(VOLCANO_GROUP_ANNOTATION)
        return (meta.get("labels") or {}).get(SCHEDULER_PLUGINS_GROUP_LABEL)

    def _free_by_node(self) -> dict[str, Resources]:
        """Each node's allocatable minus the requests of unfinished pods bound (or assumed) to it."""
        return free_by_node(self.allocatable, self.node_names, self._pods.values(), self._assumed)

    def _cluster_place(self, pods: list[Obj], free: dict[str, Resources]) -> Placed | NoFit:
        return self._cluster.place(pods, free)

    async def _namespace_labels(self, pending: list[Obj], cluster: Cluster) -> None:
        """Each Namespace's labels, listed only when a term selects namespaces by label."""
        if not wants_namespace_labels(pending, cluster.index):
            return
        code, body = await self.api.request("GET", "/api/v1/namespaces")
        if code == 200 and isinstance(body, dict):
            items = [i for i in body.get("items") or () if isinstance(i, dict)]
            cluster.ns_labels = {str(i["metadata"]["name"]): i["metadata"].get("labels") or {} for i in items}

    async def _cycle(self) -> None:
        free = self._free_by_node()
        nodes = [self._nodes[name] for name in self.node_names if name in self._nodes]
        on_node: dict[str, list[Obj]] = {}
        for pod in self._pods.values():
            node = (pod.get("spec") or {}).get("nodeName")
            if node and pod_phase(pod) not in TERMINAL:
                on_node.setdefault(str(node), []).append(pod)
        self._cluster = cluster = Cluster(
            nodes, pod_index(self._pods.values(), self._assumed), on_node, {}, self.gang_scheduler == VOLCANO
        )
        pending = [p for p in self._pods.values() if self._ours(p) and not self._is_bound(p)]
        await self._namespace_labels(pending, cluster)
        members: dict[Key, list[Obj]] = {}
        for pod in sorted(self._pods.values(), key=lambda p: obj_key(p)):
            if not self._ours(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue
            group_name = self._group_of(pod)
            if group_name is None:
                if not (pod.get("spec") or {}).get("nodeName") and pod_phase(pod) not in TERMINAL:
                    placed = cluster.place([pod], free)
                    if isinstance(placed, NoFit):
                        message = placed.message
                        if self.gang_scheduler == SCHEDULER_PLUGINS:
                            message += coscheduling_rejection(None, pod, 0)
                        await self._unschedulable(pod, "Unschedulable", message)
                    else:
                        await self._bind(placed)
                continue
            members.setdefault((obj_key(pod)[0], group_name), []).append(pod)

        def order(group: Obj) -> tuple[str, str, str]:
            meta = group.get("metadata") or {}
            return str(meta.get("creationTimestamp", "")), *obj_key(group)

        decide = volcano_status if self.gang_scheduler == VOLCANO else coscheduling_status
        # Volcano's enqueue: admitted groups whose pods are not bound yet hold their minResources.
        reserved: Resources = {}
        for group in self._groups.values():
            bound = [p for p in members.get(obj_key(group), []) if self._is_bound(p)]
            if pod_phase(group) == "Inqueue" and len(bound) < group_min_member(group):
                add(reserved, group_min_need(group))
        for group in sorted(self._groups.values(), key=order):
            if (group.get("metadata") or {}).get("deletionTimestamp"):
                continue
            status = await decide(group, members.get(obj_key(group), []), free, reserved, self._scheduling)
            if status is not None:
                await self._write_status(group, status)

    def _is_bound(self, pod: Obj) -> bool:
        uid = str((pod.get("metadata") or {}).get("uid", ""))
        bound = bool((pod.get("spec") or {}).get("nodeName")) or uid in self._assumed
        return bound and pod_phase(pod) not in TERMINAL

    # -- writes ---------------------------------------------------------------------------------

    async def _bind(self, placed: list[tuple[Obj, str]]) -> None:
        for pod, node in placed:
            ns, name = obj_key(pod)
            uid = str((pod.get("metadata") or {}).get("uid", ""))
            self._assumed[uid] = (node, pod_requests(pod))
            code, body = await self.api.request(
                "POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body=nodeobjects.binding(pod, node)
            )
            if code in (200, 201):
                self.bindings.append((ns, name, node))
                self.events.scheduled(pod, node)
            else:
                self._assumed.pop(uid, None)
                if code not in (404, 409):  # gone, or bound already: the watch will tell
                    raise ApiError(code, body)

    async def _unschedulable(self, pod: Obj, reason: str, message: str) -> None:
        """A member not bound gets `PodScheduled=False` with the scheduler's reason and message
        (written when it changes) and a `FailedScheduling` Event: kube-scheduler records one at
        every attempt, Volcano only with a change of the condition (`taskUnschedulable`)."""
        status = fit.unschedulable_status(pod, message, now_timestamp(), reason)
        if status is not None or self.gang_scheduler != VOLCANO:
            self.events.failed_scheduling(pod, message)
        if status is None:
            return
        ns, name = obj_key(pod)
        code, body = await self.api.request(
            "PUT", f"/api/v1/namespaces/{ns}/pods/{name}/status", body={**pod, "status": status}
        )
        if code == 200:
            self._store(self._pods, "MODIFIED", body)
        elif code not in (404, 409):  # gone, or changed: the watch brings it back
            raise ApiError(code, body)

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.record(obj, type_, reason, message)

    async def _write_status(self, group: Obj, status: Obj) -> None:
        if status == (group.get("status") or {}):
            return
        ns, name = obj_key(group)
        path = f"{self.group_path}/namespaces/{ns}/podgroups/{name}/status"
        code, body = await self.api.request("PUT", path, body={**group, "status": status})
        if code == 200:
            self._store(self._groups, "MODIFIED", self._typed(body))
        elif code == 409:  # a newer PodGroup: re-read it and decide again
            code, body = await self.api.request("GET", path)
            if code == 200:
                self._store(self._groups, "MODIFIED", self._typed(body))
            self._wake.set()
        elif code != 404:
            raise ApiError(code, body)
