"""The simulated scheduler's filters that look at the other pods: NodePorts (`hostports.py`),
PodTopologySpread (`spread.py`) and InterPodAffinity (`interpod.py`) — pure.

The existing pods come from `podindex.PodIndex`, the scheduler's cache (per node, with the pods
of required anti-affinity grouped by term and the per-node counts of the selectors asked about).

`Placement` is one attempt's state (the plugins' PreFilter): `before_fit(node)` runs NodePorts,
which the default profile runs before NodeResourcesFit, and `after_fit(node)` PodTopologySpread
then InterPodAffinity, which it runs after. `without(uids)` is the same with those pods gone —
DefaultPreemption's dry run with the lower-priority pods of a node evicted (it recounts every
node: only paid when a pod that fits nowhere has lower-priority pods to weigh).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from kubetrain.devcluster.kubelet import hostports, interpod, spread
from kubetrain.devcluster.kubelet.interpod import Labels, PerNode, Term
from kubetrain.devcluster.kubelet.podindex import PodIndex

Obj = dict[str, Any]

__all__ = ["IndexCounts", "Placement", "PodIndex", "needs_namespace_labels"]


def _none(node: str) -> int:
    return 0


class IndexCounts:
    """The index's counts for one attempt: the Namespaces' labels as read for it, and the pods
    `gone` (the preemption dry run's victims) left out."""

    def __init__(self, index: PodIndex, ns_labels: Mapping[str, Labels], gone: frozenset[str]) -> None:
        self._index, self._ns_labels, self._gone = index, ns_labels, gone

    def _per_node(
        self, selectors: tuple[Any, ...], live_only: bool, admits: Callable[[str], bool]
    ) -> PerNode:
        if not all(isinstance(s, Mapping) for s in selectors):
            return _none  # an absent selector matches nothing
        tally, gone = self._index.tally(selectors, live_only), self._gone
        decided: dict[str, bool] = {}

        def admits_namespace(ns: str) -> bool:
            ok = decided.get(ns)
            if ok is None:
                ok = decided[ns] = admits(ns)
            return ok

        return lambda node: tally.count(node, admits_namespace, gone)

    def matching(self, terms: Sequence[Term]) -> PerNode:
        ns_labels = self._ns_labels

        def admits(ns: str) -> bool:
            return all(t.admits_namespace(ns, ns_labels) for t in terms)

        return self._per_node(tuple(t.selector for t in terms), False, admits)

    def existing_anti(self) -> Iterable[tuple[Term, PerNode]]:
        return [(g.term, partial(g.holders, gone=self._gone)) for g in self._index.anti_groups()]

    def spread(self, namespace: str, selector: Any) -> PerNode:
        return self._per_node((selector,), True, lambda ns: ns == namespace)


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
        counts = IndexCounts(index, ns_labels, gone)
        self._spread = spread.prefilter(pod, nodes, counts.spread, node_matches)
        self._interpod = None
        if index.anti or (pod.get("spec") or {}).get("affinity"):
            self._interpod = interpod.prefilter(pod, nodes, counts, ns_labels)

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
