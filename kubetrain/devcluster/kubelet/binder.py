"""The simulated kubelet's minimal scheduler: it binds a pod only to one of its nodes where the pod
fits (`fit.py`: cordons and taints, nodeSelector, required node affinity, host ports, resource
requests and the `pods` count, required topology spread, required inter-pod affinity and
anti-affinity — `placement.py`), round-robin over the fitting nodes, through POST
`pods/NAME/binding`; gangs are not its concern.

The nodes come from the simulator's list+watch of Nodes (`relist_nodes`, `observe_node`), as
kube-scheduler's informer cache holds them, so an attempt makes no API read; a change of a node's
labels, taints, cordon or allocatable (`observe_node` returns True) has the pods that fit nowhere
tried again, as kube-scheduler's node update handler moves them back to its active queue
(eventhandlers.go `updateNodeInCache`, `nodeSchedulingPropertiesChange`). A node's free room is
its Node's `status.allocatable` minus the requests (gang/resources.py
`pod_requests`) of the unfinished pods the simulator's watch shows bound there — summed per node
as each pod event arrives (`observe`), as kube-scheduler's cache keeps a node's requested
resources, so an attempt costs the same with 10 pods or 10,000 — and of the pods it bound that
the watch does not show bound yet (`assumed`, as kube-scheduler's cache assumes a pod).
Attempts are serialised, so two pods never take the same room. The same pods (and the assumed
ones) are indexed by node for the filters that read the other pods (`podindex.PodIndex`); a pod
whose required (anti-)affinity terms, or an existing pod's required anti-affinity terms, select
namespaces by label has the Namespaces listed at that attempt (an API read; a list the
simulator may not read counts as no labels).

A pod that fits nowhere stays Pending: the simulator writes its `PodScheduled=False` condition,
reason `Unschedulable`, with kube-scheduler's message (written when it changes), and at each
attempt a `FailedScheduling` Warning Event from `default-scheduler`, which kube-scheduler's event
library folds into a series (`eventrecorders.py`, `seriesrecorder.py`). A pod it binds gets
kube-scheduler's `Scheduled` Event (through `bound`). It is tried again
when a pod is deleted or ends, when a node changes as above, and at every node heartbeat
(`retry_keys`), as kube-scheduler moves unschedulable pods back to its active queue on cluster
events and flushes them periodically.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.gang.resources import (
    TERMINAL,
    Resources,
    add,
    pod_requests,
    resources,
    take,
)
from kubetrain.devcluster.kubelet import fit, nodeobjects
from kubetrain.devcluster.kubelet.interpod import Labels
from kubetrain.devcluster.kubelet.placement import Placement, PodIndex, needs_namespace_labels

Key = tuple[str, str]
Obj = dict[str, Any]


def _uid(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("uid", ""))


def _scheduling_view(node: Obj) -> tuple[Any, ...]:
    """What of a Node the filters read: labels, taints, cordon, allocatable (a heartbeat's new
    condition timestamps are not a change)."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    labels = (node.get("metadata") or {}).get("labels")
    return labels, spec.get("taints"), spec.get("unschedulable"), status.get("allocatable")


class FitBinder:
    def __init__(
        self, node_names: list[str], pods: dict[Key, Obj], bound: Callable[[Obj, str], None] | None = None
    ) -> None:
        self.node_names = node_names
        self._bound_to = bound  # told of each pod it bound, and the node (the Scheduled Event)
        self._pods = pods  # the simulator's watch cache, shared
        self._counter = 0
        self._lock = asyncio.Lock()
        self._assumed: dict[str, tuple[str, Resources]] = {}  # uid -> (node, requests)
        self.unschedulable: dict[Key, str] = {}  # pods that fit nowhere -> the message
        # What the watch shows bound and unfinished: uid -> (node, requests), and each node's sum
        # (kept per pod event, as kube-scheduler's cache keeps NodeInfo.Requested).
        self._counted: dict[str, tuple[str, Resources]] = {}
        self._used: dict[str, Resources] = {}
        self._nodes: dict[str, Obj] = {}  # the watch's Nodes of `node_names`, by name
        self._index = PodIndex()  # the counted and assumed pods, by node
        self.nodes_synced = asyncio.Event()

    def relist_nodes(self, nodes: list[Obj]) -> bool:
        """The Node list (at start or after the watch expired); True when one of ours changed."""
        mine = {str(n["metadata"]["name"]): n for n in nodes if n["metadata"].get("name") in self.node_names}
        changed = mine.keys() != self._nodes.keys() or any(
            _scheduling_view(n) != _scheduling_view(self._nodes[name]) for name, n in mine.items()
        )
        self._nodes = mine
        self.nodes_synced.set()
        return changed

    def observe_node(self, kind: str, node: Obj) -> bool:
        """A Node watch event; True when it changed what the scheduler sees of one of our nodes
        (added, deleted, or its labels, taints, cordon or allocatable changed)."""
        name = str((node.get("metadata") or {}).get("name", ""))
        if name not in self.node_names:
            return False
        old = self._nodes.pop(name, None)
        if kind == "DELETED":
            return old is not None
        self._nodes[name] = node
        return old is None or _scheduling_view(old) != _scheduling_view(node)

    def observe(self, key: Key, pod: Obj, deleted: bool) -> bool:
        """The watch saw the pod (the newest version) or its deletion; True when that freed room
        on a node (a pod that counted there ended, went or moved)."""
        uid, spec = _uid(pod), pod.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        live = not deleted and node and str((pod.get("status") or {}).get("phase") or "") not in TERMINAL
        if deleted or node:
            self._assumed.pop(uid, None)
            self.unschedulable.pop(key, None)
        counted, freed = self._counted.get(uid), False
        if counted is not None and (not live or counted[0] != node):
            del self._counted[uid]
            take(self._used[counted[0]], counted[1])
            freed = True
        if live and uid not in self._counted:
            need = pod_requests(pod)
            self._counted[uid] = (node, need)
            add(self._used.setdefault(node, {}), need)
        if live:
            self._index.put(uid, node, pod)
        elif deleted or node:
            self._index.drop(uid)
        return freed

    def retry_keys(self) -> list[Key]:
        """The pods that did not fit anywhere at their last attempt."""
        return list(self.unschedulable)

    def remembered(self) -> int:
        return len(self.unschedulable) + len(self._assumed) + len(self._counted) + len(self._index)

    async def _namespace_labels(self, api: RawApi, pod: Obj) -> dict[str, Labels]:
        """Each Namespace's labels, read only when a term selects namespaces by label."""
        if not needs_namespace_labels(pod) and not self._index.needs_namespace_labels():
            return {}
        code, body = await api.request("GET", "/api/v1/namespaces")
        if code != 200 or not isinstance(body, dict):
            return {}
        items = [i for i in body.get("items") or () if isinstance(i, dict)]
        return {str(i["metadata"]["name"]): (i["metadata"].get("labels") or {}) for i in items}

    async def bind(self, api: RawApi, pod: Obj) -> str | None:
        """Bind the pod where it fits; the FailedScheduling message when it fits nowhere."""
        key = ((pod.get("metadata") or {}).get("namespace", ""), (pod.get("metadata") or {}).get("name", ""))
        ns_labels = await self._namespace_labels(api, pod)
        async with self._lock:
            nodes = [self._nodes[name] for name in self.node_names if name in self._nodes]
            free = self.free(nodes)
            others = Placement(pod, nodes, self._index, ns_labels, fit.node_matches)
            reasons = fit.filter_nodes(pod, nodes, free, others)
            fitting = [name for name, why in reasons.items() if not why]
            if not fitting:
                message = fit.fit_error(pod, reasons, free, self._bound(), others)
                self.unschedulable[key] = message
                return message
            node = fitting[self._counter % len(fitting)]
            self._counter += 1
            ns, name = key
            code, body = await api.request(
                "POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body=nodeobjects.binding(pod, node)
            )
            if code not in (200, 201, 404, 409):
                raise ApiError(code, body)
            self.unschedulable.pop(key, None)
            if code in (200, 201):
                self._assumed[_uid(pod)] = (node, pod_requests(pod))
                self._index.put(_uid(pod), node, pod)
                if self._bound_to is not None:
                    self._bound_to(pod, node)
            return None

    def free(self, nodes: list[Obj]) -> dict[str, Resources]:
        """Each node's allocatable minus what its unfinished and assumed pods request."""
        free: dict[str, Resources] = {}
        for node in nodes:
            name = str(node["metadata"]["name"])
            free[name] = resources((node.get("status") or {}).get("allocatable"))
            take(free[name], self._used.get(name, {}))
        for uid, (name, need) in self._assumed.items():
            if uid not in self._counted and name in free:
                take(free[name], need)
        return free

    def _bound(self) -> dict[str, list[Obj]]:
        out: dict[str, list[Obj]] = {}
        for pod in self._pods.values():
            node = (pod.get("spec") or {}).get("nodeName")
            if node and str((pod.get("status") or {}).get("phase") or "") not in TERMINAL:
                out.setdefault(str(node), []).append(pod)
        return out
