"""kube-controller-manager's taint-eviction controller (pkg/controller/tainteviction
taint_eviction.go `Controller`) as an ordinary API client: it deletes the pods a NoExecute taint
of their node does not allow to stay, at once or when the smallest matching `tolerationSeconds`
has passed (`noexecute.plan`), on an injectable `Clock` (tests advance a FakeClock).

It is fed what its owner watches (the pod simulator's Node and pod watches): `observe_node`
(`NodeUpdated` + `handleNodeUpdate`: a change of the node's NoExecute taints re-plans every pod
on the node; a node without them cancels their evictions; a deleted node is forgotten without
cancelling anything) and `observe_pod` (`PodUpdated` + `handlePodUpdate`: only a pod's first
sight, a new nodeName or new tolerations re-plan it; a deleted pod's eviction is cancelled).
Cancelling a pending eviction records a `TaintManagerEviction` Event `Cancelling deletion of Pod
ns/name`. An eviction (`deletePodHandler`) records `Marking for deletion Pod ns/name`, then
(`addConditionAndDeletePod`, up to 5 tries) reads the pod, writes the `DisruptionTarget=True`
condition (reason `DeletionByTaintManager`) to its status when it is not there, and DELETEs it
(the default grace period: the kubelet then stops its containers). Upstream patches the status
with the pod's uid as precondition; here it is a `pods/status` PUT with the resourceVersion read,
tried again after a conflict. As upstream's queue, a pod evicted once is not planned again until
a cancel (its deletion, or its node losing the taints) clears it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.devcluster.apiserver.base.background import cancel_all
from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.controllers import noexecute
from kubetrain.devcluster.controllers.noexecute import Work
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name)
RETRIES = 5  # taint_eviction.go `retries`
DONE = None  # an eviction that ran: kept so the key is not planned again (TimedWorkerQueue)


class TaintEviction:
    def __init__(self, api: Callable[[], RawApi], clock: Clock, pods: Mapping[Key, dict[str, Any]]) -> None:
        self._api = api
        self.clock = clock
        self._pods = pods  # the owner's pods by key, as last seen
        self._node_taints: dict[str, list[Mapping[str, Any]]] = {}  # NoExecute taints per seen node
        self._seen: dict[Key, tuple[str, Any]] = {}  # nodeName and tolerations last processed
        self._work: dict[Key, Work | None] = {}  # pending evictions (DONE once run)
        self._timers: dict[Key, asyncio.Task[None]] = {}
        self._running: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> dict[Key, float]:
        """Pods whose eviction is planned, and when it is due (monotonic seconds)."""
        return {k: w.fire_at for k, w in self._work.items() if w is not None}

    async def stop(self) -> None:
        await cancel_all([*self._timers.values(), *self._running])
        self._timers.clear()
        self._running.clear()

    # ---- observing --------------------------------------------------------------------------
    def observe_node(self, kind: str, node: Mapping[str, Any]) -> None:
        name = str((node.get("metadata") or {}).get("name") or "")
        if kind == "DELETED":
            self._node_taints.pop(name, None)
            return
        taints = noexecute.no_execute_taints(node)
        if name in self._node_taints and self._node_taints[name] == taints:
            return
        self._node_taints[name] = taints
        for key, pod in list(self._pods.items()):
            if (pod.get("spec") or {}).get("nodeName") == name:
                if taints:
                    self._process(key, pod, taints)
                else:
                    self._cancel(key)

    def observe_pod(self, kind: str, pod: Mapping[str, Any]) -> None:
        md = pod.get("metadata") or {}
        key = (str(md.get("namespace") or ""), str(md.get("name") or ""))
        if kind == "DELETED":
            self._seen.pop(key, None)
            self._cancel(key)
            return
        spec = pod.get("spec") or {}
        seen = (str(spec.get("nodeName") or ""), spec.get("tolerations"))
        if self._seen.get(key) == seen:
            return
        self._seen[key] = seen
        taints = self._node_taints.get(seen[0]) if seen[0] else None
        if taints:
            self._process(key, pod, taints)

    # ---- the eviction queue ---------------------------------------------------------------
    def _process(self, key: Key, pod: Mapping[str, Any], taints: list[Mapping[str, Any]]) -> None:
        now = self.clock.monotonic()
        decided = noexecute.plan(self._work.get(key), taints, (pod.get("spec") or {}).get("tolerations"), now)
        if decided.cancel:
            self._cancel(key)
        if decided.work is not None and key not in self._work:  # AddWork ignores a known key
            self._work[key] = decided.work
            timer = asyncio.ensure_future(self._fire(key, decided.work))
            self._timers[key] = timer
            self._running.add(timer)
            timer.add_done_callback(self._running.discard)

    def _cancel(self, key: Key) -> None:
        if key not in self._work:
            return
        work = self._work.pop(key)
        if work is DONE:
            return
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._record(key, cancelled=True)

    async def _fire(self, key: Key, work: Work) -> None:
        await self.clock.sleep(work.fire_at - self.clock.monotonic())
        self._timers.pop(key, None)
        self._work[key] = DONE
        self._record(key, cancelled=False)
        for _ in range(RETRIES):
            try:
                await self._delete_with_condition(key)
                return
            except (ApiError, OSError, TimeoutError) as exc:
                log.debug("taint eviction of pod %s/%s: %s", *key, exc)
                await asyncio.sleep(0.01)
        if key in self._work and self._work[key] is DONE:
            del self._work[key]  # failed: a later update may plan it again

    # ---- writes ---------------------------------------------------------------------------
    def _record(self, key: Key, *, cancelled: bool) -> None:
        event = noexecute.eviction_event(key[0], key[1], cancelled, self.clock.now())
        task = asyncio.ensure_future(self._post_event(key[0], event))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _post_event(self, namespace: str, event: dict[str, Any]) -> None:
        code, body = await self._api().request("POST", f"/api/v1/namespaces/{namespace}/events", body=event)
        if code not in (201, 409):
            log.debug("taint eviction event not recorded: %s", ApiError(code, body))

    async def _delete_with_condition(self, key: Key) -> None:
        path = f"/api/v1/namespaces/{key[0]}/pods/{key[1]}"
        code, pod = await self._api().request("GET", path)
        if code == 404:
            return  # gone already: nothing to evict
        if code != 200:
            raise ApiError(code, pod)
        generation = int((pod.get("metadata") or {}).get("generation") or 0)
        conditions = noexecute.add_condition(pod.get("status"), self.clock.now(), generation)
        if conditions is not None:
            pod.setdefault("status", {})["conditions"] = conditions
            code, body = await self._api().request("PUT", f"{path}/status", body=pod)
            if code != 200:
                raise ApiError(code, body)
        code, body = await self._api().request("DELETE", path)
        if code not in (200, 202, 404):
            raise ApiError(code, body)
