"""One list-then-watch of a collection shared by several components, as client-go's shared
informers serve every controller of kube-controller-manager from one watch per resource.

    pods = SharedWatch("/api/v1/pods")
    pods.subscribe(kubelet.observe, kubelet.relisted, namespace="team-a")  # that namespace only
    pods.subscribe(pod_gc.observe_pod, pod_gc.relist_pods)                 # every pod
    await pods.run(api)                                                    # until cancelled

`run` is `client.list_then_watch` over `path`: each list (the first, and the relist after a 410)
is handed to every subscriber's `relisted`, each watch event to every subscriber's `observe`, in
the order they subscribed, one subscriber after the other (a subscriber sees an event only after
the ones before it have handled it). Each subscriber keeps its own view of what it is handed (the
simulated kubelet the whole pods, the pod garbage collector only what its passes read). A
subscriber with a `namespace` is handed only that namespace's objects, so a simulator confined
to one namespace and a cluster-wide controller still share one watch. `synced` is set once the
first list has been handed to every subscriber.
A subscriber that raises is logged and misses that list or event (as with a watch of its own,
which resumes after the event); the others are handed it all the same.
**Limit:** subscribers join before `run` starts; one that subscribes later misses the list and the
events before it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kubetrain.devcluster.client import RawApi, list_then_watch

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Observe = Callable[[str, Obj], Awaitable[None]]
Relisted = Callable[[list[Obj]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class _Subscriber:
    observe: Observe
    relisted: Relisted
    namespace: str | None

    def wants(self, obj: Obj) -> bool:
        return self.namespace is None or (obj.get("metadata") or {}).get("namespace") == self.namespace


class SharedWatch:
    def __init__(self, path: str) -> None:
        self.path = path
        self.synced = asyncio.Event()
        self._subscribers: list[_Subscriber] = []

    def subscribe(self, observe: Observe, relisted: Relisted, *, namespace: str | None = None) -> None:
        """Hand this subscriber every list and event of the watch (of `namespace` only, if given)."""
        self._subscribers.append(_Subscriber(observe, relisted, namespace))

    async def run(self, api: RawApi) -> None:
        """List and watch `path` for every subscriber until cancelled."""
        await list_then_watch(api, self.path, self._observe, self._relisted)

    async def _relisted(self, items: list[Obj]) -> None:
        for subscriber in self._subscribers:
            try:
                await subscriber.relisted([o for o in items if subscriber.wants(o)])
            except Exception:
                log.exception("a subscriber of the watch of %s failed on its list", self.path)
        self.synced.set()

    async def _observe(self, kind: str, obj: Obj) -> None:
        for subscriber in self._subscribers:
            if not subscriber.wants(obj):
                continue
            try:
                await subscriber.observe(kind, obj)
            except Exception:
                log.exception("a subscriber of the watch of %s failed on a %s event", self.path, kind)
