"""The EndpointSlice controller and the Endpoints controller of kube-controller-manager
(k8s.io/kubernetes pkg/controller/endpointslice `Controller.syncService`, pkg/controller/endpoint
`Controller.syncService`), fed by store events; what they want is `endpointsplan.py`'s.

Every Service with a selector gets EndpointSlices (labels `kubernetes.io/service-name` and
`endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`, owned by the Service,
so the garbage collector removes them with it) and an Endpoints object of its name (deleted when
the Service is). A Service without a selector (`default/kubernetes`) is left alone.

A change of a Service, of a pod (its labels, IP, readiness, phase, deletion, node or hostname),
or the deletion of one of the controller's slices or Endpoints queues one sync of each Service
concerned (coalesced). Nothing is listed per event: the controller keeps, from the events,
Services by selector (grouped by the selector's keys, so a pod finds the Services selecting it
with one lookup per distinct key set in its namespace), pods by label, and the managed slices by
Service. A Service is synced at most every `MIN_SYNC_INTERVAL` (0.1 s; changes meanwhile coalesce).
A write that meets a changed object (409) queues the sync again. Nothing is created in
a terminating namespace (as kube-apiserver's NamespaceLifecycle admission refuses it).

Limits: IPv4 only (no IPv6 or dual-stack slices), no topology hints or traffic distribution,
no EndpointSlice mirroring of custom Endpoints, no `last-change-trigger-time` annotation and no
1,000-address cap (over-capacity annotation) on Endpoints; a node's zone label is read when a
Service is synced, so changing it alone does not update the slices.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import meta
from kubetrain.devcluster.apiserver.kinds.resources import NAMESPACES_KEY, PODS_KEY
from kubetrain.devcluster.apiserver.storage.store import Event
from kubetrain.devcluster.apiserver.verbs.core import ApiServer
from kubetrain.devcluster.controllers import endpointsplan as plan

Work = Callable[[], Awaitable[None]]
Enqueue = Callable[[Work], None]
ServiceKey = tuple[str, str]  # (namespace, name)

SERVICES_KEY, ENDPOINTS_KEY, SLICES_KEY = "services", "endpoints", "endpointslices.discovery.k8s.io"
NODES_KEY = "nodes"
# A Service synced less than this ago is synced again at the end of the interval (the changes
# meanwhile coalesce), so a job-wide Service of hundreds of starting pods is rebuilt a few times
# per second, not once per pod write. Upstream's equivalent is --endpointslice-updates-batch-period
# (`AddAfter(key, endpointUpdatesBatchPeriod)`, default 0) with its workqueue's coalescing.
MIN_SYNC_INTERVAL = 0.1


def _pod_fingerprint(pod: Obj | None) -> Any:
    """What of a pod its endpoints depend on (a change elsewhere queues nothing)."""
    if pod is None:
        return None
    md, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return (
        md.get("labels"),
        bool(md.get("deletionTimestamp")),
        status.get("phase"),
        plan.pod_ip(pod),
        plan.is_pod_ready(pod),
        spec.get("nodeName"),
        spec.get("hostname"),
        spec.get("subdomain"),
        [c.get("ports") for c in spec.get("containers") or []],
    )


class EndpointsControllers:
    """Indexes fed by `route` and the syncs it queues."""

    def __init__(self, api: ApiServer, enqueue: Enqueue) -> None:
        self.api = api
        self.enqueue = enqueue
        self._pending: set[ServiceKey] = set()
        self._selectors: dict[ServiceKey, dict[str, str]] = {}
        # namespace -> selector keys -> selector values -> Service names
        self._by_selector: dict[str, dict[tuple[str, ...], dict[tuple[str, ...], set[str]]]] = {}
        self._pods_by_label: dict[tuple[str, str, str], set[str]] = {}  # (ns, key, value) -> pods
        self._slices: dict[ServiceKey, set[str]] = {}  # managed slice names by Service
        # per Service: its resourceVersion and the pods' entries computed for it (a sync
        # recomputes only the pods that changed)
        self._memos: dict[ServiceKey, tuple[str, plan.Memo]] = {}
        self.syncs = 0  # completed syncs (tests and benchmarks read it)
        self.delayed = 0  # syncs waiting out MIN_SYNC_INTERVAL
        self.undelayed = asyncio.Event()  # set while no sync waits (`settle` waits on it)
        self.undelayed.set()
        self._last_sync: dict[ServiceKey, float] = {}  # loop time of each Service's last sync
        for svc in api.store.items(SERVICES_KEY):
            self._index_service(svc, None)
        for pod in api.store.items(PODS_KEY):
            self._index_pod(pod, None)
        for sl in api.store.items(SLICES_KEY):
            self._index_slice(sl, None)

    # ---- indexes -----------------------------------------------------------------------------
    def _index_service(self, new: Obj | None, old: Obj | None) -> None:
        md = (new or old or {})["metadata"]
        key = (str(md.get("namespace", "")), str(md["name"]))
        previous = self._selectors.pop(key, None)
        if previous is not None:
            keys = tuple(sorted(previous))
            by_values = self._by_selector[key[0]][keys]
            names = by_values[tuple(previous[k] for k in keys)]
            names.discard(key[1])
            if not names:
                del by_values[tuple(previous[k] for k in keys)]
            if not by_values:
                del self._by_selector[key[0]][keys]
        selector = plan.selector_of(new) if new is not None else None
        if selector is not None:
            self._selectors[key] = selector
            keys = tuple(sorted(selector))
            values = tuple(selector[k] for k in keys)
            self._by_selector.setdefault(key[0], {}).setdefault(keys, {}).setdefault(values, set()).add(
                key[1]
            )

    def _index_pod(self, new: Obj | None, old: Obj | None) -> None:
        md = (new or old or {})["metadata"]
        ns, name = str(md.get("namespace", "")), str(md["name"])
        for k, v in ((old or {}).get("metadata", {}).get("labels") or {}).items():
            names = self._pods_by_label.get((ns, k, v))
            if names is not None:
                names.discard(name)
                if not names:
                    del self._pods_by_label[(ns, k, v)]
        for k, v in ((new or {}).get("metadata", {}).get("labels") or {}).items():
            self._pods_by_label.setdefault((ns, k, v), set()).add(name)

    def _index_slice(self, new: Obj | None, old: Obj | None) -> ServiceKey | None:
        def owner(sl: Obj | None) -> ServiceKey | None:
            labels = (sl or {}).get("metadata", {}).get("labels") or {}
            if sl is None or labels.get(plan.MANAGED_BY_LABEL) != plan.MANAGED_BY:
                return None
            svc = labels.get(plan.SERVICE_NAME_LABEL)
            return (str(sl["metadata"].get("namespace", "")), str(svc)) if svc else None

        name = str((new or old or {})["metadata"]["name"])
        before, after = owner(old), owner(new)
        if before is not None and before != after:
            names = self._slices.get(before, set())
            names.discard(name)
            if not names:
                self._slices.pop(before, None)
        if after is not None:
            self._slices.setdefault(after, set()).add(name)
        return before or after

    def services_selecting(self, namespace: str, labels: dict[str, str] | None) -> set[str]:
        out: set[str] = set()
        if not labels:
            return out
        for keys, by_values in self._by_selector.get(namespace, {}).items():
            values = tuple(labels.get(k) for k in keys)
            if None not in values:
                out |= by_values.get(values, set())  # type: ignore[arg-type]
        return out

    def pods_selected(self, namespace: str, selector: dict[str, str]) -> set[str]:
        sets = sorted(
            (self._pods_by_label.get((namespace, k, v), set()) for k, v in selector.items()), key=len
        )
        return set(sets[0]).intersection(*sets[1:]) if sets else set()

    # ---- events ------------------------------------------------------------------------------
    def route(self, ev: Event) -> None:
        new = None if ev.type == "DELETED" else ev.obj
        if ev.rkey == SERVICES_KEY:
            had = (ev.obj["metadata"].get("namespace", ""), ev.obj["metadata"]["name"]) in self._selectors
            self._index_service(new, ev.prev if ev.type != "DELETED" else ev.obj)
            if had or (new is not None and plan.selector_of(new) is not None):
                self.request(str(ev.obj["metadata"].get("namespace", "")), str(ev.obj["metadata"]["name"]))
        elif ev.rkey == PODS_KEY:
            old = ev.obj if ev.type == "DELETED" else ev.prev
            if ev.type == "MODIFIED" and _pod_fingerprint(old) == _pod_fingerprint(new):
                return
            self._index_pod(new, old)
            ns = str(ev.obj["metadata"].get("namespace", ""))
            names = self.services_selecting(ns, (new or {}).get("metadata", {}).get("labels"))
            names |= self.services_selecting(ns, (old or {}).get("metadata", {}).get("labels"))
            for name in names:
                self.request(ns, name)
        elif ev.rkey == SLICES_KEY:
            owner = self._index_slice(new, ev.obj if ev.type == "DELETED" else ev.prev)
            if ev.type == "DELETED" and owner is not None and owner in self._selectors:
                self.request(*owner)
        elif ev.rkey == ENDPOINTS_KEY and ev.type == "DELETED":
            key = (str(ev.obj["metadata"].get("namespace", "")), str(ev.obj["metadata"]["name"]))
            if key in self._selectors:
                self.request(*key)

    def request(self, namespace: str, name: str) -> None:
        """Queue one sync of the Service (none when one is pending); within `MIN_SYNC_INTERVAL`
        of its last sync, at the end of that interval."""
        key = (namespace, name)
        if key in self._pending:
            return
        self._pending.add(key)
        work: Work = functools.partial(self.sync, namespace, name)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.enqueue(work)
            return
        wait = self._last_sync.get(key, -MIN_SYNC_INTERVAL) + MIN_SYNC_INTERVAL - loop.time()
        if wait <= 0:
            self.enqueue(work)
            return
        self.delayed += 1
        self.undelayed.clear()
        loop.call_later(wait, self._release, work)

    def _release(self, work: Work) -> None:
        self.delayed -= 1
        self.enqueue(work)  # queued before `undelayed` is set: a settle then waits for the sync
        if not self.delayed:
            self.undelayed.set()

    # ---- sync --------------------------------------------------------------------------------
    async def sync(self, namespace: str, name: str) -> None:
        self._pending.discard((namespace, name))
        with contextlib.suppress(RuntimeError):
            self._last_sync[(namespace, name)] = asyncio.get_running_loop().time()
        store = self.api.store
        svc = store.get(SERVICES_KEY, namespace, name)
        selector = plan.selector_of(svc) if svc is not None else None
        if svc is None:
            self._memos.pop((namespace, name), None)
            self._last_sync.pop((namespace, name), None)
            current = store.get(ENDPOINTS_KEY, namespace, name)
            if current is not None and not _skip_mirror(current):
                self._remove(ENDPOINTS_KEY, current)
            self.syncs += 1
            return
        if selector is None or svc["metadata"].get("deletionTimestamp"):
            return
        pods = [
            p
            for p in (store.get(PODS_KEY, namespace, n) for n in self.pods_selected(namespace, selector))
            if p
        ]
        nodes = {}
        for pod in pods:
            node_name = str((pod.get("spec") or {}).get("nodeName") or "")
            if node_name and node_name not in nodes:
                node = store.get(NODES_KEY, "", node_name)
                if node is not None:
                    nodes[node_name] = node
        existing = [
            s
            for s in (store.get(SLICES_KEY, namespace, n) for n in self._slices.get((namespace, name), ()))
            if s
        ]
        stamp, memo = self._memos.get((namespace, name), ("", {}))
        if stamp != svc["metadata"].get("resourceVersion"):
            memo = {}
        slices = plan.plan_slices(svc, existing, pods, nodes, memo)
        for sl in slices.deletes:
            self._remove(SLICES_KEY, sl)
        for sl in slices.updates:
            self._update(SLICES_KEY, sl)
        for sl in slices.creates:
            sl["metadata"]["name"] = meta.generate_name(sl["metadata"]["generateName"], self.api.rng)
            self._create(SLICES_KEY, namespace, sl)
        want = plan.desired_endpoints(svc, pods, memo)
        live = {(str(p["metadata"].get("uid", "")), str(p["metadata"].get("resourceVersion"))) for p in pods}
        memo = {k: v for k, v in memo.items() if k[:2] in live}
        self._memos[(namespace, name)] = (str(svc["metadata"].get("resourceVersion")), memo)
        current = store.get(ENDPOINTS_KEY, namespace, name)
        if current is None:
            self._create(ENDPOINTS_KEY, namespace, want)
        elif not current["metadata"].get("deletionTimestamp") and plan.endpoints_differ(current, want):
            fixed = {
                **current,
                "metadata": {**current["metadata"], "labels": want["metadata"].get("labels", {})},
            }
            fixed.pop("subsets", None)
            if "subsets" in want:
                fixed["subsets"] = want["subsets"]
            self._update(ENDPOINTS_KEY, fixed)
        self.syncs += 1

    def _create(self, rkey: str, namespace: str, obj: Obj) -> None:
        ns = self.api.store.get(NAMESPACES_KEY, "", namespace)
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return  # kube-apiserver's NamespaceLifecycle admission refuses creates there
        rt = self.api.registry.by_key(rkey)
        assert rt is not None
        meta.prepare_create(obj, rt, namespace, self.api.clock())
        try:
            self.api.store.create(rkey, obj)
        except KeyError:
            self._retry(obj)

    def _update(self, rkey: str, obj: Obj) -> None:
        rt = self.api.registry.by_key(rkey)
        assert rt is not None
        try:
            self.api.commit(rt, obj, obj["metadata"]["resourceVersion"])
        except errors.ApiError as exc:
            if exc.code == 409:
                self._retry(obj)
            elif exc.code != 404:
                raise

    def _remove(self, rkey: str, obj: Obj) -> None:
        md = obj["metadata"]
        try:
            self.api.store.remove(rkey, md.get("namespace", ""), md["name"], md["resourceVersion"])
        except LookupError:
            pass
        except ValueError:
            self._retry(obj)

    def _retry(self, obj: Obj) -> None:
        """Written meanwhile: sync the Service again."""
        md = obj["metadata"]
        labels = md.get("labels") or {}
        svc = labels.get(plan.SERVICE_NAME_LABEL) if obj.get("kind") == "EndpointSlice" else md.get("name")
        if svc:
            self.request(str(md.get("namespace", "")), str(svc))


def _skip_mirror(ep: Obj) -> bool:
    return (ep["metadata"].get("labels") or {}).get("endpointslice.kubernetes.io/skip-mirror") == "true"
