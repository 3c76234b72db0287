"""The simulated scheduler's filters that look at the other pods: NodePorts (`hostports.py`),
PodTopologySpread (`spread.py`) and InterPodAffinity (`interpod.py`) — pure.

`PodIndex` holds the existing pods as kube-scheduler's cache holds them per node (NodeInfo): the
pods the binder counts on a node (bound, not Succeeded/Failed; being deleted included) and the
pods it assumed; apart, those with required anti-affinity (NodeInfo.PodsWithRequiredAntiAffinity)
and those claiming host ports (NodeInfo.UsedPorts), so a pod without such terms pays nothing for
the others' pods.

`Placement` is one attempt's state (the plugins' PreFilter): `before_fit(node)` runs NodePorts,
which the default profile runs before NodeResourcesFit, and `after_fit(node)` PodTopologySpread
then InterPodAffinity, which it runs after. `without(uids)` is the same with those pods gone —
DefaultPreemption's dry run with the lower-priority pods of a node evicted (it recounts every
node: only paid when a pod that fits nowhere has lower-priority pods to weigh).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from kubetrain.devcluster.kubelet import hostports, interpod, spread
from kubetrain.devcluster.kubelet.interpod import Labels, Term

Obj = dict[str, Any]
T = TypeVar("T")


def _remove(table: dict[str, dict[str, T]], node: str, uid: str) -> None:
    entries = table.get(node)
    if entries is not None and entries.pop(uid, None) is not None and not entries:
        del table[node]


class PodIndex:
    def __init__(self) -> None:
        self._at: dict[str, str] = {}  # uid -> node
        self.pods: dict[str, dict[str, Obj]] = {}  # node -> uid -> pod
        self.anti: dict[str, dict[str, list[Term]]] = {}  # node -> uid -> required anti-affinity
        self.ports: dict[str, dict[str, list[hostports.Port]]] = {}  # node -> uid -> host ports

    def __len__(self) -> int:
        return len(self._at)

    def put(self, uid: str, node: str, pod: Obj) -> None:
        """The pod (its newest version) is on `node`."""
        self.drop(uid)
        self._at[uid] = node
        self.pods.setdefault(node, {})[uid] = pod
        terms = interpod.required_terms(pod, "podAntiAffinity")
        if terms:
            self.anti.setdefault(node, {})[uid] = terms
        ports = hostports.host_ports(pod)
        if ports:
            self.ports.setdefault(node, {})[uid] = ports

    def drop(self, uid: str) -> None:
        node = self._at.pop(uid, None)
        if node is None:
            return
        _remove(self.pods, node, uid)
        _remove(self.anti, node, uid)
        _remove(self.ports, node, uid)

    def needs_namespace_labels(self) -> bool:
        """Some existing pod's anti-affinity selects namespaces by label."""
        return any(t.needs_namespace_labels() for on in self.anti.values() for ts in on.values() for t in ts)


def needs_namespace_labels(pod: Obj) -> bool:
    terms = interpod.required_terms(pod, "podAffinity") + interpod.required_terms(pod, "podAntiAffinity")
    return any(t.needs_namespace_labels() for t in terms)


class Placement:
    def __init__(
        self,
        pod: Obj,
        nodes: list[Obj],
        index: PodIndex,
        ns_labels: Mapping[str, Labels],
        node_matches: Callable[[Obj, Obj], bool],
        gone: frozenset[str] = frozenset(),
    ) -> None:
        self._pod, self._nodes, self._index = pod, nodes, index
        self._ns_labels, self._node_matches, self._gone = ns_labels, node_matches, gone
        self._by_name: dict[str, Obj] | None = None
        self._ports = hostports.host_ports(pod)
        self._spread = spread.prefilter(pod, nodes, self._pods_on, node_matches)
        self._interpod = None
        if index.anti or (pod.get("spec") or {}).get("affinity"):
            self._interpod = interpod.prefilter(pod, nodes, self._pods_on, self._anti_on, ns_labels)

    def _pods_on(self, node: str) -> Iterator[Obj]:
        return (p for uid, p in self._index.pods.get(node, {}).items() if uid not in self._gone)

    def _anti_on(self, node: str) -> Iterator[list[Term]]:
        return (ts for uid, ts in self._index.anti.get(node, {}).items() if uid not in self._gone)

    def before_fit(self, node: str) -> str | None:
        """NodePorts' reason on the node; None: it passes."""
        if not self._ports:
            return None
        used = (p for uid, ps in self._index.ports.get(node, {}).items() if uid not in self._gone for p in ps)
        return hostports.REASON if hostports.conflicts(self._ports, used) else None

    def after_fit(self, node: str) -> str | None:
        """PodTopologySpread's then InterPodAffinity's reason on the node; None: both pass."""
        if self._spread is None and self._interpod is None:
            return None
        if self._by_name is None:
            self._by_name = {str(n["metadata"]["name"]): n for n in self._nodes}
        obj = self._by_name[node]
        why = spread.reason(self._spread, obj) if self._spread is not None else None
        if why is None and self._interpod is not None:
            why = interpod.reason(self._interpod, obj)
        return why

    def without(self, uids: frozenset[str]) -> Placement:
        return Placement(self._pod, self._nodes, self._index, self._ns_labels, self._node_matches, uids)
