"""The in-process controllers kube-controller-manager and apiextensions run for the API's semantics.

- Garbage collector (ownerReferences): when an owner is gone, a dependent none of whose other
  owners exists is deleted (background propagation), otherwise its reference to the gone owner is
  removed; a dependent whose owners never existed is deleted too. An owner with the
  `foregroundDeletion` finalizer has its dependents deleted and loses the finalizer once no
  dependent with `blockOwnerDeletion: true` remains; an owner with the `orphan` finalizer has its
  dependents' references to it removed, then loses the finalizer.
- Namespace controller: a terminating namespace has all its content deleted (built-in kinds such
  as pods first, custom resources after), then its `kubernetes` finalizer removed, then it is
  gone. `namespace_delete_interval` (default 0) paces it: kube-apiserver deletes a collection
  one object at a time, so on a busy server a namespace of 1,000 pods takes tens of seconds
  while its other content (the jobs) still exists.
- ServiceAccount controller (`serviceaccounts.py`): each live namespace has ServiceAccount
  `default`.
- Root CA publisher (`rootca.py`): each live namespace has ConfigMap `kube-root-ca.crt` with the
  API server's CA (once `publish_root_ca` gave it one).
- EndpointSlice and Endpoints controllers (`endpointslices.py`): every Service with a selector
  has EndpointSlices and an Endpoints object listing its pods.
- CRD controller: a stored CRD's resources are served (synchronously, so a CR can be created right
  after its CRD); a deleted CRD's objects are removed.

Work runs on one background task fed by store events, after the write that caused it, as in a real
cluster (clients observe the results through watches).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
from collections.abc import Awaitable, Callable

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.background import BackgroundTask
from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.kinds.resources import CRD_KEY, NAMESPACES_KEY, crd_resource_type
from kubetrain.devcluster.apiserver.storage.store import Event
from kubetrain.devcluster.apiserver.verbs import deletion
from kubetrain.devcluster.apiserver.verbs.core import ApiServer, Target
from kubetrain.devcluster.controllers import disruption, rootca, serviceaccounts
from kubetrain.devcluster.controllers.endpointslices import EndpointsControllers

log = logging.getLogger(__name__)

Work = Callable[[], Awaitable[None]]


class Controllers:
    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self.store = api.store
        self._queue: asyncio.Queue[Work] = asyncio.Queue()
        self._background = BackgroundTask("devcluster-controllers", self._run)
        self.store.listeners.append(self._on_event)
        self._idle = asyncio.Event()
        self._idle.set()
        self.namespace_delete_interval = 0.0  # seconds after each object a namespace deletion removes
        self.root_ca: str | None = None  # the CA bundle kube-root-ca.crt publishes (PEM)
        self.endpoints = EndpointsControllers(api, self._enqueue)

    def start(self) -> None:
        self._background.start()

    async def stop(self) -> None:
        await self._background.stop()

    def publish_root_ca(self, ca_pem: str) -> None:
        """Publish `ca_pem` as kube-root-ca.crt in every namespace, now and from now on."""
        self.root_ca = ca_pem
        for ns in list(self.store.items(NAMESPACES_KEY)):
            self._enqueue(functools.partial(self._root_ca, str(ns["metadata"]["name"])))

    async def settle(self) -> None:
        """Wait until the controllers have no queued work (for tests), delayed syncs included:
        woken when the last delayed sync is queued, not by polling."""
        while True:
            await self._idle.wait()
            if not self.endpoints.delayed:
                return
            await self.endpoints.undelayed.wait()

    async def _run(self) -> None:
        while True:
            work = await self._queue.get()
            self._idle.clear()
            try:
                await work()
            except errors.ApiError as exc:
                if exc.code not in (404, 409):
                    log.warning("devcluster controller: %s", exc)
            except Exception:
                log.exception("devcluster controller failed")
            finally:
                if self._queue.empty():
                    self._idle.set()

    def _foreground_work(self, uid: str) -> Work:
        return lambda: self._foreground(uid)

    def _enqueue(self, work: Work) -> None:
        self._idle.clear()
        self._queue.put_nowait(work)

    # ---- event routing -----------------------------------------------------------------------
    def _on_event(self, ev: Event) -> None:
        if ev.rkey == CRD_KEY:
            self._on_crd(ev)
        disruption.route(ev, self.api, self._enqueue)
        self.endpoints.route(ev)
        md = ev.obj["metadata"]
        account_ns = serviceaccounts.namespace_needing_account(ev)
        if account_ns:
            self._enqueue(lambda: self._default_account(account_ns))
        root_ca_ns = rootca.namespace_needing_root_ca(ev)
        if root_ca_ns and self.root_ca is not None:
            self._enqueue(lambda: self._root_ca(root_ca_ns))
        if ev.type == "DELETED":
            uid = md.get("uid", "")
            if self.store.dependents(uid):
                self._enqueue(lambda: self._owner_gone(uid))
            for ref in md.get("ownerReferences") or ():
                self._enqueue(self._foreground_work(ref.get("uid", "")))
            ns = md.get("namespace")
            if ns:
                self._enqueue(lambda: self._namespace_check(ns))
            return
        if md.get("deletionTimestamp"):
            finalizers = md.get("finalizers") or ()
            uid = md["uid"]
            if deletion.FOREGROUND in finalizers:
                self._enqueue(lambda: self._foreground(uid))
            if deletion.ORPHAN in finalizers:
                self._enqueue(lambda: self._orphan(uid))
            if ev.rkey == NAMESPACES_KEY and (
                ev.prev is None or not ev.prev["metadata"].get("deletionTimestamp")
            ):
                name = md["name"]
                self._enqueue(lambda: self._terminate_namespace(name))
        if ev.type == "ADDED" and md.get("ownerReferences"):
            uid = md["uid"]
            self._enqueue(lambda: self._dangling(uid))

    def _on_crd(self, ev: Event) -> None:
        registry = self.api.registry
        crd = ev.obj
        if ev.type == "DELETED":
            rt = registry.remove(crd["metadata"]["name"])
            if rt is not None:
                self.store.drop_resource(rt.key)
            return
        if ev.type == "MODIFIED" and ev.prev is not None and ev.prev.get("spec") == crd.get("spec"):
            return  # a status or metadata write: what the CRD serves (and its compiled rules) is unchanged
        try:
            rt = crd_resource_type(crd)
        except (KeyError, TypeError) as exc:
            log.warning("CRD %s not served: %s", crd["metadata"].get("name"), exc)
            return
        registry.add(rt)

    # ---- helpers -----------------------------------------------------------------------------
    def _locate(self, uid: str) -> tuple[ResourceType, Obj] | None:
        found = self.store.by_uid(uid)
        if found is None:
            return None
        (rkey, _, _), obj = found
        rt = self.api.registry.by_key(rkey)
        return (rt, obj) if rt is not None else None

    def _target(self, rt: ResourceType, obj: Obj) -> Target:
        md = obj["metadata"]
        return Target(
            rt,
            rt.versions[0],
            md.get("namespace", ""),
            md["name"],
            user={"username": "system:serviceaccount:kube-system:generic-garbage-collector"},
        )

    async def _delete(self, rt: ResourceType, obj: Obj, policy: str = "Background") -> None:
        if obj["metadata"].get("deletionTimestamp") and policy == "Background":
            return
        try:
            await deletion.delete(
                self.api,
                self._target(rt, obj),
                {"propagationPolicy": policy, "preconditions": {"uid": obj["metadata"]["uid"]}},
            )
        except errors.ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _update(self, rt: ResourceType, new: Obj, expected_rv: str) -> None:
        try:
            self.api.commit(rt, new, expected_rv)
        except errors.ApiError as exc:
            if exc.code == 409:
                uid = new["metadata"]["uid"]
                self._enqueue(lambda: self._retry_update(uid))
            elif exc.code != 404:
                raise

    async def _retry_update(self, uid: str) -> None:
        found = self._locate(uid)
        if found is None:
            return
        md = found[1]["metadata"]
        if md.get("deletionTimestamp"):
            await self._foreground(uid)
            await self._orphan(uid)
        for ref in md.get("ownerReferences") or ():
            if self.store.by_uid(ref.get("uid", "")) is None:
                await self._owner_gone(ref.get("uid", ""))

    # ---- garbage collection ------------------------------------------------------------------
    async def _owner_gone(self, owner_uid: str) -> None:
        for (rkey, _, _), dep in self.store.dependents(owner_uid):
            rt = self.api.registry.by_key(rkey)
            if rt is None:
                continue
            refs = dep["metadata"].get("ownerReferences") or []
            alive = [
                r
                for r in refs
                if r.get("uid") != owner_uid and self.store.by_uid(r.get("uid", "")) is not None
            ]
            if alive:
                new = copy.deepcopy(dep)
                new["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != owner_uid]
                self._update(rt, new, dep["metadata"]["resourceVersion"])
            else:
                await self._delete(rt, dep)

    async def _dangling(self, uid: str) -> None:
        found = self._locate(uid)
        if found is None:
            return
        rt, obj = found
        refs = obj["metadata"].get("ownerReferences") or []
        if refs and all(self.store.by_uid(r.get("uid", "")) is None for r in refs):
            await self._delete(rt, obj)

    async def _foreground(self, uid: str) -> None:
        found = self._locate(uid)
        if found is None:
            return
        rt, owner = found
        md = owner["metadata"]
        if not md.get("deletionTimestamp") or deletion.FOREGROUND not in (md.get("finalizers") or ()):
            return
        for (rkey, _, _), dep in self.store.dependents(uid):
            dep_rt = self.api.registry.by_key(rkey)
            if dep_rt is not None and not dep["metadata"].get("deletionTimestamp"):
                await self._delete(dep_rt, dep)
        blocking = [
            d
            for _, d in self.store.dependents(uid)
            if any(
                r.get("uid") == uid and r.get("blockOwnerDeletion")
                for r in d["metadata"].get("ownerReferences") or ()
            )
        ]
        if not blocking:
            current = self.store.by_uid(uid)
            if current is None:
                return
            new = copy.deepcopy(current[1])
            new["metadata"]["finalizers"] = [
                f for f in new["metadata"].get("finalizers") or [] if f != deletion.FOREGROUND
            ]
            self._update(rt, new, current[1]["metadata"]["resourceVersion"])

    async def _orphan(self, uid: str) -> None:
        found = self._locate(uid)
        if found is None:
            return
        rt, owner = found
        md = owner["metadata"]
        if not md.get("deletionTimestamp") or deletion.ORPHAN not in (md.get("finalizers") or ()):
            return
        for (rkey, _, _), dep in self.store.dependents(uid):
            dep_rt = self.api.registry.by_key(rkey)
            if dep_rt is None:
                continue
            new = copy.deepcopy(dep)
            new["metadata"]["ownerReferences"] = [
                r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != uid
            ]
            if not new["metadata"]["ownerReferences"]:
                del new["metadata"]["ownerReferences"]
            self._update(dep_rt, new, dep["metadata"]["resourceVersion"])
        current = self.store.by_uid(uid)
        if current is not None:
            new = copy.deepcopy(current[1])
            new["metadata"]["finalizers"] = [
                f for f in new["metadata"].get("finalizers") or [] if f != deletion.ORPHAN
            ]
            self._update(rt, new, current[1]["metadata"]["resourceVersion"])

    async def _default_account(self, namespace: str) -> None:
        serviceaccounts.ensure_default_account(self.api, namespace)

    async def _root_ca(self, namespace: str) -> None:
        if self.root_ca is not None:
            rootca.ensure_root_ca(self.api, namespace, self.root_ca)

    # ---- namespaces --------------------------------------------------------------------------
    async def _terminate_namespace(self, name: str) -> None:
        for rt in self.api.registry.all():
            if not rt.namespaced:
                continue
            for obj in list(self.store.items(rt.key, name)):
                await self._delete(rt, obj)
                if self.namespace_delete_interval > 0:
                    await asyncio.sleep(self.namespace_delete_interval)
        await self._namespace_check(name)

    async def _namespace_check(self, name: str) -> None:
        ns = self.store.get(NAMESPACES_KEY, "", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        if any(self.store.count(rt.key, name) for rt in self.api.registry.all() if rt.namespaced):
            return
        rt = self.api.registry.by_key(NAMESPACES_KEY)
        assert rt is not None
        new = copy.deepcopy(ns)
        spec = new.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != "kubernetes"]
        if not spec["finalizers"]:
            del spec["finalizers"]
        if not new["metadata"].get("finalizers"):
            self.store.remove(NAMESPACES_KEY, "", name)
        else:
            self._update(rt, new, ns["metadata"]["resourceVersion"])
