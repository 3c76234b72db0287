"""The disruption controller of kube-controller-manager (pkg/controller/disruption disruption.go):
it keeps each PodDisruptionBudget's status, which the Eviction API (verbs/eviction.py) decides on.

A pod or budget change queues one sync of its namespace's budgets (coalesced); the sync reads the
budgets and pods from the store, computes each status (`disruptionstatus.new_status`: what the
fields mean is there), writes it when it changed, and looks again when the oldest in-flight
eviction expires. A write that loses a race (409: an eviction wrote the budget meanwhile) is
computed again. A controller's scale is read as `getScaleController` does, over devcluster's
resources (a custom resource with a scale subresource).
"""

from __future__ import annotations

import asyncio
import copy
import weakref
from collections.abc import Awaitable, Callable

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.pdbs import PDBS_KEY, selects
from kubetrain.devcluster.apiserver.kinds.resources import PODS_KEY
from kubetrain.devcluster.apiserver.kinds.scales import get_path, spec_replicas_path
from kubetrain.devcluster.apiserver.storage.store import Event
from kubetrain.devcluster.apiserver.verbs.core import ApiServer
from kubetrain.devcluster.controllers.disruptionstatus import ScaleOf, SyncError, new_status

Work = Callable[[], Awaitable[None]]
Enqueue = Callable[[Work], None]


def _scale_reader(api: ApiServer) -> ScaleOf:
    """`getScaleController` over devcluster's resources."""

    def scale_of(ref: Obj, namespace: str) -> int | None:
        api_version = str(ref.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        rt = api.registry.by_kind(group, str(ref.get("kind") or ""))
        if rt is None or version not in rt.versions:
            raise SyncError(f'no matches for kind "{ref.get("kind")}" in version "{api_version}"')
        if "scale" not in rt.subresources:
            raise SyncError(f"{rt.key} does not implement the scale subresource")
        owner = api.store.get(rt.key, namespace, str(ref.get("name") or ""))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return None
        replicas = get_path(owner, spec_replicas_path(rt))
        return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 0

    return scale_of


_pending: weakref.WeakKeyDictionary[ApiServer, set[str]] = weakref.WeakKeyDictionary()


def route(ev: Event, api: ApiServer, enqueue: Enqueue) -> None:
    """Queue one sync of the namespace's budgets for a pod or budget change (coalesced)."""
    if ev.rkey in (PODS_KEY, PDBS_KEY):
        request(api, str(ev.obj["metadata"].get("namespace", "")), enqueue)


def request(api: ApiServer, namespace: str, enqueue: Enqueue) -> None:
    pending = _pending.setdefault(api, set())
    if namespace not in pending:
        pending.add(namespace)
        enqueue(lambda: sync_namespace(api, namespace, enqueue))


async def sync_namespace(api: ApiServer, namespace: str, enqueue: Enqueue) -> None:
    _pending.get(api, set()).discard(namespace)
    budgets = list(api.store.items(PDBS_KEY, namespace))
    if not budgets:
        return
    pods = list(api.store.items(PODS_KEY, namespace))
    now = api.clock()
    scale_of = _scale_reader(api)
    rt = api.registry.by_key(PDBS_KEY)
    assert rt is not None
    for pdb in budgets:
        selected = [
            p for p in pods if selects((pdb.get("spec") or {}).get("selector"), p["metadata"].get("labels"))
        ]
        status, recheck = new_status(pdb, selected, scale_of, now)
        if recheck is not None:
            delay = max((recheck - now).total_seconds(), 0.0) + 0.001
            asyncio.get_running_loop().call_later(delay, request, api, namespace, enqueue)
        if status == pdb.get("status"):
            continue
        new = copy.deepcopy(pdb)
        new["status"] = status
        try:
            api.commit(rt, new, pdb["metadata"]["resourceVersion"])
        except errors.ApiError as exc:
            if exc.code != 409 and exc.code != 404:
                raise
            if exc.code == 409:
                request(api, namespace, enqueue)  # written meanwhile (an eviction): compute again
