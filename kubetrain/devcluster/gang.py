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
- allocate: the unbound pods of an `Inqueue`/`Running` group are placed on nodes (each pod's
  requests must fit one node) and bound through `pods/NAME/binding` only when bound + succeeded +
  placed pods reach `minMember` — all or nothing. Too few pods: condition reason `NotEnoughTasks`;
- status: `Running` once bound-or-running + succeeded members reach `minMember` (Volcano's
  `jobStatus` rule), and `running`/`succeeded`/`failed` counts.

scheduler-plugins (`scheduling.x-k8s.io/v1alpha1`; pods labelled `scheduling.x-k8s.io/pod-group`
with the scheduler-plugins scheduler name) — the PodGroup controller's phases "" → `Pending` →
`PreScheduling` (minMember pods exist) and the coscheduling plugin's PreFilter/Permit: pods are
bound all-or-nothing once minMember exist and `minResources` fits; `scheduled` counts bindings
(`Scheduling`/`Scheduled`), then `Running` (running + succeeded ≥ minMember), `Finished`
(succeeded ≥ minMember) or `Failed`.

A pod of ours without a group is bound alone when it fits. Capacity is `nodes` x `allocatable`
(default: what `PodSimulator` reports for its Nodes). Binding only: `PodSimulator` (with
`scheduler_names=("default-scheduler",)`) runs the pods once bound. Cycles are serial and
event-driven (no timers), so tests wait on observable state, never on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Iterable, Mapping
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from kubetrain.devcluster import podstatus
from kubetrain.devcluster.gang_crds import SCHEDULER_PLUGINS, VOLCANO, podgroup_crd
from kubetrain.devcluster.gang_resources import Resources, add, fits, pod_requests, resources, show, take
from kubetrain.devcluster.kubelet_api import ApiError, RawApi, list_then_watch

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
SCHEDULER_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_SCHEDULER_NAMES = {VOLCANO: ("volcano",), SCHEDULER_PLUGINS: ("scheduler-plugins-scheduler",)}
TERMINAL = ("Succeeded", "Failed")

__all__ = ["GangSchedulerSimulator", "pod_requests", "podgroup_crd"]


def _key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _rv(obj: Obj) -> int:
    rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    return int(rv) if rv.isdigit() else -1


def _phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    ) -> None:
        crd = podgroup_crd(gang_scheduler)  # ValueError for an unknown gang scheduler
        spec = crd["spec"]
        self.gang_scheduler = gang_scheduler
        self.kubeconfig_path = kubeconfig_path
        self.group_path = f"/apis/{spec['group']}/{spec['versions'][0]['name']}"
        self.scheduler_names = scheduler_names or DEFAULT_SCHEDULER_NAMES[gang_scheduler]
        self.node_names = list(node_names)
        self.allocatable = resources(allocatable or podstatus.NODE_CAPACITY)
        self._user_agent = user_agent or f"kubetrain-gang-simulator ({gang_scheduler})"
        self._api: RawApi | None = None
        self._groups: dict[Key, Obj] = {}
        self._pods: dict[Key, Obj] = {}
        self._assumed: dict[str, tuple[str, Resources]] = {}  # pod uid -> (node, requests) bound by us
        self._wake = asyncio.Event()
        self._synced = {"groups": asyncio.Event(), "pods": asyncio.Event()}
        self._tasks: set[asyncio.Task[None]] = set()
        self._session = uuid.uuid4().hex[:8]
        self.cycles = 0
        self.bindings: list[tuple[str, str, str]] = []  # (namespace, pod, node) in binding order

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
        self._spawn(self._loop())
        for event in self._synced.values():
            await asyncio.wait_for(event.wait(), 30)

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
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

    # -- caches ---------------------------------------------------------------------------------

    @staticmethod
    def _store(cache: dict[Key, Obj], kind: str, obj: Obj) -> None:
        key = _key(obj)
        if kind == "DELETED":
            cache.pop(key, None)
        elif key not in cache or _rv(obj) >= _rv(cache[key]):
            cache[key] = obj

    async def _on_group(self, kind: str, obj: Obj) -> None:
        self._store(self._groups, kind, obj)
        self._wake.set()

    async def _on_pod(self, kind: str, obj: Obj) -> None:
        self._store(self._pods, kind, obj)
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        if kind == "DELETED" or (obj.get("spec") or {}).get("nodeName"):
            self._assumed.pop(uid, None)  # the watch now shows (or no longer needs) our binding
        self._wake.set()

    async def _relist(self, cache: dict[Key, Obj], items: list[Obj], synced: str) -> None:
        cache.clear()
        cache.update({_key(obj): obj for obj in items})
        self._synced[synced].set()
        self._wake.set()

    async def _groups_listed(self, items: list[Obj]) -> None:
        await self._relist(self._groups, items, "groups")

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
        free = {node: dict(self.allocatable) for node in self.node_names}
        counted: set[str] = set()
        for pod in self._pods.values():
            node = (pod.get("spec") or {}).get("nodeName")
            uid = str((pod.get("metadata") or {}).get("uid", ""))
            if node in free and _phase(pod) not in TERMINAL:
                take(free[node], pod_requests(pod))
                counted.add(uid)
        for uid, (node, need) in self._assumed.items():
            if uid not in counted and node in free:
                take(free[node], need)
        return free

    def _place(self, pods: list[Obj], free: dict[str, Resources]) -> list[tuple[Obj, str]] | None:
        """A node for every pod (most free CPU first), taken from `free`; None if one does not fit."""
        trial = {node: dict(res) for node, res in free.items()}
        placed: list[tuple[Obj, str]] = []
        for pod in pods:
            need = pod_requests(pod)
            nodes = [n for n in self.node_names if fits(need, trial[n])]
            if not nodes:
                return None
            node = max(nodes, key=lambda n: (trial[n].get("cpu", Fraction(0)), -self.node_names.index(n)))
            take(trial[node], need)
            placed.append((pod, node))
        free.update(trial)
        return placed

    async def _cycle(self) -> None:
        free = self._free_by_node()
        members: dict[Key, list[Obj]] = {}
        for pod in sorted(self._pods.values(), key=lambda p: _key(p)):
            if not self._ours(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue
            group_name = self._group_of(pod)
            if group_name is None:
                if not (pod.get("spec") or {}).get("nodeName") and _phase(pod) not in TERMINAL:
                    placed = self._place([pod], free)
                    if placed:
                        await self._bind(placed)
                continue
            members.setdefault((_key(pod)[0], group_name), []).append(pod)

        def order(group: Obj) -> tuple[str, str, str]:
            meta = group.get("metadata") or {}
            return str(meta.get("creationTimestamp", "")), *_key(group)

        decide = self._volcano if self.gang_scheduler == VOLCANO else self._coscheduling
        # Volcano's enqueue: admitted groups whose pods are not bound yet hold their minResources.
        reserved: Resources = {}
        for group in self._groups.values():
            bound = [p for p in members.get(_key(group), []) if self._is_bound(p)]
            if _phase(group) == "Inqueue" and len(bound) < self._min_member(group):
                add(reserved, self._min_need(group))
        for group in sorted(self._groups.values(), key=order):
            if (group.get("metadata") or {}).get("deletionTimestamp"):
                continue
            status = await decide(group, members.get(_key(group), []), free, reserved)
            if status is not None:
                await self._write_status(group, status)

    # -- Volcano --------------------------------------------------------------------------------

    def _is_bound(self, pod: Obj) -> bool:
        uid = str((pod.get("metadata") or {}).get("uid", ""))
        bound = bool((pod.get("spec") or {}).get("nodeName")) or uid in self._assumed
        return bound and _phase(pod) not in TERMINAL

    @staticmethod
    def _min_member(group: Obj) -> int:
        return int((group.get("spec") or {}).get("minMember") or 0)

    def _min_need(self, group: Obj) -> Resources:
        spec = group.get("spec") or {}
        return {**resources(spec.get("minResources")), "pods": Fraction(self._min_member(group))}

    async def _volcano(
        self, group: Obj, pods: list[Obj], free: dict[str, Resources], reserved: Resources
    ) -> Obj:
        min_member = self._min_member(group)
        status = dict(group.get("status") or {})
        phase = status.get("phase") or ""
        if phase == "":
            return {**status, "phase": "Pending"}
        bound = [p for p in pods if self._is_bound(p)]
        succeeded = [p for p in pods if _phase(p) == "Succeeded"]
        unbound = [p for p in pods if not self._is_bound(p) and _phase(p) not in TERMINAL]
        condition: tuple[str, str] | None = None
        if phase == "Pending":
            need = self._min_need(group)
            idle: Resources = {}
            for node_free in free.values():
                add(idle, node_free)
            take(idle, reserved)
            if fits(need, idle):
                phase = "Inqueue"
                add(reserved, need)
            else:
                condition = (
                    "NotEnoughResources",
                    f"{min_member}/{len(pods)} tasks in gang unschedulable: pod group is not ready, "
                    f"minResources ({show(need)}) exceed the idle resources of the cluster ({show(idle)})",
                )
        if phase in ("Inqueue", "Running") and unbound:
            if len(bound) + len(succeeded) + len(unbound) < min_member:
                condition = (
                    "NotEnoughTasks",
                    f"{min_member - len(bound) - len(succeeded)}/{len(pods)} tasks in gang unschedulable: "
                    f"pod group is not ready, {len(unbound)} Pending, {min_member} minAvailable",
                )
            else:
                placed = self._place(unbound, free)
                if placed is None:
                    condition = ("NotEnoughResources", f"{len(unbound)} tasks in gang do not fit any node")
                else:
                    await self._bind(placed)
                    bound += [pod for pod, _ in placed]
                    if phase == "Inqueue":
                        take(reserved, self._min_need(group))
        # Volcano's jobStatus: allocated (bound or running) + succeeded >= minMember is Running;
        # short of that an admitted group stays Inqueue and any other goes back to Pending.
        if len(bound) + len(succeeded) >= min_member and phase in ("Inqueue", "Running"):
            phase = "Running"
        elif phase == "Running":
            phase = "Pending"
        counts = {
            "running": sum(1 for p in pods if _phase(p) == "Running"),
            "succeeded": len(succeeded),
            "failed": sum(1 for p in pods if _phase(p) == "Failed"),
        }
        old = [c for c in status.get("conditions") or () if c.get("type") == "Unschedulable"]
        conditions = [c for c in status.get("conditions") or () if c.get("type") != "Unschedulable"]
        if condition is not None:
            if old and (old[0].get("reason"), old[0].get("message")) == condition:
                conditions.append(old[0])
            else:
                conditions.append(
                    {
                        "type": "Unschedulable",
                        "status": "True",
                        "reason": condition[0],
                        "message": condition[1],
                        "transitionID": self._session,
                        "lastTransitionTime": _now(),
                    }
                )
        new = {**status, "phase": phase, **counts}
        if conditions or "conditions" in status:
            new["conditions"] = conditions
        return new

    # -- scheduler-plugins ----------------------------------------------------------------------

    async def _coscheduling(
        self, group: Obj, pods: list[Obj], free: dict[str, Resources], reserved: Resources
    ) -> Obj:
        spec = group.get("spec") or {}
        min_member = int(spec.get("minMember") or 0)
        status = dict(group.get("status") or {})
        phase = status.get("phase") or ""
        if phase in ("Finished", "Failed"):
            return status
        unbound = [p for p in pods if not (p.get("spec") or {}).get("nodeName") and _phase(p) not in TERMINAL]
        bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        # The coscheduling plugin: PreFilter (minMember pods exist, minResources fit), then Permit
        # releases the pods together.
        if unbound and len(pods) >= min_member:
            idle: Resources = {}
            for node_free in free.values():
                for k, v in node_free.items():
                    idle[k] = idle.get(k, Fraction(0)) + v
            if not bound and not fits(resources(spec.get("minResources")), idle):
                placed = None
            else:
                placed = self._place(unbound, free)
            if placed is not None and len(bound) + len(placed) >= min_member:
                await self._bind(placed)
                scheduled = int(status.get("scheduled") or 0) + len(placed)
                status["scheduled"] = scheduled
                status.setdefault("scheduleStartTime", _now())
                if phase in ("PreScheduling", "Scheduling", "Pending", ""):
                    phase = "Scheduled" if scheduled >= min_member else "Scheduling"
        # The PodGroup controller.
        if phase == "":
            phase = "Pending"
        elif phase == "Pending":
            if len(pods) >= min_member:
                phase = "PreScheduling"
                owners = sorted(
                    f"{_key(pods[0])[0]}/{ref.get('name')}"
                    for ref in (pods[0].get("metadata") or {}).get("ownerReferences") or ()
                )
                if owners:
                    status["occupiedBy"] = ",".join(owners)
        else:
            running = sum(1 for p in pods if _phase(p) == "Running")
            succeeded = sum(1 for p in pods if _phase(p) == "Succeeded")
            failed = sum(1 for p in pods if _phase(p) == "Failed")
            status.update(running=running, succeeded=succeeded, failed=failed)
            if not pods:
                phase = "Pending"
            else:
                if int(status.get("scheduled") or 0) >= min_member and phase == "Scheduling":
                    phase = "Scheduled"
                if running + succeeded >= min_member and phase == "Scheduled":
                    phase = "Running"
                if failed and failed + running + succeeded >= min_member:
                    phase = "Failed"
                if succeeded >= min_member:
                    phase = "Finished"
        return {**status, "phase": phase}

    # -- writes ---------------------------------------------------------------------------------

    async def _bind(self, placed: list[tuple[Obj, str]]) -> None:
        for pod, node in placed:
            ns, name = _key(pod)
            uid = str((pod.get("metadata") or {}).get("uid", ""))
            self._assumed[uid] = (node, pod_requests(pod))
            code, body = await self.api.request(
                "POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body=podstatus.binding(pod, node)
            )
            if code in (200, 201):
                self.bindings.append((ns, name, node))
            else:
                self._assumed.pop(uid, None)
                if code not in (404, 409):  # gone, or bound already: the watch will tell
                    raise ApiError(code, body)

    async def _write_status(self, group: Obj, status: Obj) -> None:
        if status == (group.get("status") or {}):
            return
        ns, name = _key(group)
        path = f"{self.group_path}/namespaces/{ns}/podgroups/{name}/status"
        code, body = await self.api.request("PUT", path, body={**group, "status": status})
        if code == 200:
            self._store(self._groups, "MODIFIED", body)
        elif code == 409:  # a newer PodGroup: re-read it and decide again
            code, body = await self.api.request("GET", path)
            if code == 200:
                self._store(self._groups, "MODIFIED", body)
            self._wake.set()
        elif code != 404:
            raise ApiError(code, body)
