"""kube-controller-manager's pod garbage collector (k8s.io/kubernetes pkg/controller/podgc
gc_controller.go `PodGCController`) as an ordinary API client, on an injectable `Clock` (tests
advance a FakeClock). What it deletes is decided in `podgcplan.py`.

As upstream reads its pod and Node informers' listers, a pass reads a watch-fed cache: `pods` and
`nodes` are the caches, kept by `relist_*` and `observe_*`, of what a pass reads of each
(`podgcplan.cached_pod`, `cached_node`), subscribed to a `SharedWatch` of every pod and one of
every Node (cluster-wide): the pod simulator's, given as `watches`, so the simulated kubelet,
scheduler and collector share one pod watch and one Node watch as kube-controller-manager's
controllers share informers; without `watches`, `loop` runs watches of its own. `loop` waits
until both lists are in (`WaitForNamedCacheSync`), then runs a pass at once and every
`GC_CHECK_PERIOD` (20 s) after the last one ended (`wait.UntilWithContext`: `passes_forever`).
A pass (`gc`) costs no LIST: it only GETs each node whose quarantine is over and that the cache
lacks (`checkIfNodeExists`: only a 404 counts as deleted; another error leaves it for a later
sighting), then carries out the plan: for a pod to
mark Failed it reads the pod, PUTs `pods/status` with phase Failed (and the orphan's
DisruptionTarget condition) at the resourceVersion read, read again and tried again after a
conflict (upstream sends a strategic merge patch of the status with the pod's uid as
precondition); then it DELETEs the pod with gracePeriodSeconds 0. The status is written only to a
pod with the cached uid and the DELETE carries that uid as precondition, so a pod recreated under
the same name meanwhile is left alone (upstream's DELETE has no precondition). A failed write is
logged and waits for the next pass, as upstream. Like an informer's, the cache lags the API by the
watch's delivery: a change made just before a pass may only be seen by the next one.

`threshold` is `--terminated-pod-gc-threshold` (default 12500; tests set it lower);
`deleted` counts the deletions by reason (upstream's `pod_gc_collector_force_delete_pods_total`);
`passes` counts completed passes (tests wait for the next one).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.apiserver.base.background import cancel_all
from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.controllers import podgcplan
from kubetrain.devcluster.controllers.podgcplan import Deletion, Quarantine
from kubetrain.devcluster.sharedwatch import SharedWatch
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

STATUS_RETRIES = 5  # re-reads after a conflicting status write
Key = tuple[str, str]  # (namespace, name)


class PodGC:
    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        threshold: int = podgcplan.TERMINATED_POD_GC_THRESHOLD,
        watches: tuple[SharedWatch, SharedWatch] | None = None,
    ) -> None:
        """`watches`: the shared (pods, Nodes) watches of every pod and Node that feed the caches,
        run by their owner; None: `loop` runs watches of its own."""
        self._api = api
        self.clock = clock
        self.threshold = threshold
        self.quarantine = Quarantine()
        self.deleted: Counter[str] = Counter()
        self.passes = 0
        self.pods: dict[Key, dict[str, Any]] = {}  # the pod cache, by (namespace, name)
        self.nodes: dict[str, dict[str, Any]] = {}  # the Node cache, by name
        self._pods_synced = asyncio.Event()
        self._nodes_synced = asyncio.Event()
        self._own_watches = watches is None
        pods, nodes = watches or (SharedWatch("/api/v1/pods"), SharedWatch("/api/v1/nodes"))
        if pods.path != "/api/v1/pods" or nodes.path != "/api/v1/nodes":
            raise ValueError(f"pod GC needs watches of every pod and Node, not {pods.path}, {nodes.path}")
        pods.subscribe(self.observe_pod, self.relist_pods)
        nodes.subscribe(self.observe_node, self.relist_nodes)
        self._watches = (pods, nodes)

    async def loop(self) -> None:
        """Wait for both caches' lists (running the watches when they are its own), then
        `passes_forever`."""
        owned = [asyncio.ensure_future(w.run(self._api())) for w in self._watches if self._own_watches]
        try:
            await self._pods_synced.wait()
            await self._nodes_synced.wait()
            await self.passes_forever()
        finally:
            await cancel_all(owned)

    async def passes_forever(self) -> None:
        while True:
            try:
                await self.gc()
            except (TimeoutError, ApiError, OSError) as exc:
                log.debug("pod garbage collection pass failed: %s", exc)
            await self.clock.sleep(podgcplan.GC_CHECK_PERIOD)

    # ---- the caches (what upstream's informers hold) -------------------------------------------
    async def relist_pods(self, items: list[dict[str, Any]]) -> None:
        self.pods = {_key(p): podgcplan.cached_pod(p) for p in items}
        self._pods_synced.set()

    async def observe_pod(self, kind: str, pod: dict[str, Any]) -> None:
        if kind == "DELETED":
            self.pods.pop(_key(pod), None)
        else:
            self.pods[_key(pod)] = podgcplan.cached_pod(pod)

    async def relist_nodes(self, items: list[dict[str, Any]]) -> None:
        self.nodes = {_key(n)[1]: podgcplan.cached_node(n) for n in items}
        self._nodes_synced.set()

    async def observe_node(self, kind: str, node: dict[str, Any]) -> None:
        if kind == "DELETED":
            self.nodes.pop(_key(node)[1], None)
        else:
            self.nodes[_key(node)[1]] = podgcplan.cached_node(node)

    async def gc(self) -> None:
        """One pass over every cached pod (`PodGCController.gc`)."""
        pods = list(self.pods.values())
        nodes = dict(self.nodes)
        now = self.clock.monotonic()
        self.quarantine.sight(podgcplan.missing_nodes(pods, nodes), now)
        deleted_nodes = {n for n in self.quarantine.due(now) if n not in nodes and await self._gone(n)}
        for deletion in podgcplan.plan(pods, nodes, deleted_nodes, self.threshold):
            try:
                if await self._mark_failed_and_delete(deletion):
                    self.deleted[deletion.why] += 1
            except (TimeoutError, ApiError, OSError) as exc:
                log.warning("pod %s/%s not garbage collected: %s", deletion.namespace, deletion.name, exc)
        self.passes += 1

    async def _gone(self, node: str) -> bool:
        code, body = await self._api().request("GET", f"/api/v1/nodes/{node}")
        if code == 404:
            return True
        if code != 200:
            log.warning("node %s not looked up: %s", node, ApiError(code, body))
        return False

    async def _mark_failed_and_delete(self, deletion: Deletion) -> bool:
        """`markFailedAndDeletePodWithCondition`; False when the pod was gone or replaced."""
        path = f"/api/v1/namespaces/{deletion.namespace}/pods/{deletion.name}"
        log.info("PodGC is force deleting Pod %s/%s (%s)", deletion.namespace, deletion.name, deletion.why)
        if deletion.mark_failed and not await self._mark_failed(path, deletion):
            return False
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": deletion.uid},
        }
        code, body = await self._api().request("DELETE", path, body=options)
        if code in (404, 409):
            return False
        if code not in (200, 202):
            raise ApiError(code, body)
        return True

    async def _mark_failed(self, path: str, deletion: Deletion) -> bool:
        for _ in range(STATUS_RETRIES):
            code, pod = await self._api().request("GET", path)
            if code == 404 or (code == 200 and pod["metadata"].get("uid") != deletion.uid):
                return False
            if code != 200:
                raise ApiError(code, pod)
            status = podgcplan.failed_status(
                pod.get("status"), deletion.condition, self.clock.now(), deletion.generation
            )
            if status is None:
                return True
            pod["status"] = status
            code, body = await self._api().request("PUT", f"{path}/status", body=pod)
            if code == 200:
                return True
            if code == 404:
                return False
            if code != 409:
                raise ApiError(code, body)
        what = f"{deletion.namespace}/{deletion.name}"
        raise ApiError(409, {"message": f"pods/status of {what} kept conflicting"})


def _key(obj: dict[str, Any]) -> Key:
    md = obj.get("metadata") or {}
    return str(md.get("namespace") or ""), str(md.get("name") or "")
