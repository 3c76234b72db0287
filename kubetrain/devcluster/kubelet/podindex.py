"""The simulated scheduler's cache of the pods on its nodes, for the filters that read the other
pods (`placement.py`) — pure.

`PodIndex` holds the existing pods as kube-scheduler's cache holds them per node (NodeInfo): the
pods the binder counts on a node (bound, not Succeeded/Failed; being deleted included) and the
pods it assumed; apart, those with required anti-affinity (NodeInfo.PodsWithRequiredAntiAffinity)
and those claiming host ports (NodeInfo.UsedPorts), so a pod without such terms pays nothing for
the others' pods. It is kept up to date from the pod watch (`put`, `drop`), and keeps two more
things current with it, so a PreFilter reads per node, not per existing pod:

- the existing pods' required anti-affinity terms grouped by term (`AntiGroup`): each distinct
  term with how many times each node's pods carry it, so the incoming pod is matched once per
  distinct term (a job of N pods with the same one-per-node term is one term, not N);
- `Tally`s: for a conjunction of label selectors the filters asked about (a PodTopologySpread
  constraint's, an InterPodAffinity term's or all of a pod's affinity terms'), the pods whose
  labels match them all, per node and namespace. A tally is built by one pass over the indexed
  pods the first time a PreFilter asks for it, then kept as pods come, change and go: each pod
  is matched against a selector once, when the watch shows it (again only when its node,
  namespace, labels or deletion changed), not at every attempt of every pending pod. Namespaces
  are decided at the PreFilter (a term's `namespaces`/`namespaceSelector`, a constraint's pod
  namespace), once per namespace, so the Namespaces' labels are never cached.

**Limit:** the most recently asked `MAX_TALLIES` (64) selector conjunctions are kept; a pod
event costs one label match per kept tally, and a PreFilter asking for one not kept pays one
pass over the indexed pods (the cost of every attempt before the tallies).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kubetrain.devcluster.kubelet import hostports, interpod
from kubetrain.devcluster.kubelet.interpod import Term, labels_of, namespace_of, selector_matches

Obj = dict[str, Any]
T = TypeVar("T")
MAX_TALLIES = 64


def _remove(table: dict[str, dict[str, T]], node: str, uid: str) -> None:
    entries = table.get(node)
    if entries is not None and entries.pop(uid, None) is not None and not entries:
        del table[node]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def term_key(term: Term) -> str:
    """Equal for terms that match the same pods at the same topology key."""
    return _canonical([sorted(term.namespaces), term.namespace_selector, term.selector, term.topology_key])


@dataclass(frozen=True)
class Seen:
    """What of a pod the tallies read: where it is, its labels, whether it is being deleted."""

    node: str
    namespace: str
    labels: Mapping[str, Any]
    deleting: bool


class Tally:
    """The indexed pods whose labels match every one of `selectors` (with `live_only`, those not
    being deleted too), by node and namespace."""

    def __init__(self, selectors: tuple[Any, ...], live_only: bool) -> None:
        self.selectors, self.live_only = selectors, live_only
        self.members: dict[str, dict[str, set[str]]] = {}  # node -> namespace -> uids

    def admits(self, seen: Seen) -> bool:
        if self.live_only and seen.deleting:
            return False
        return all(selector_matches(s, seen.labels) for s in self.selectors)

    def add(self, uid: str, seen: Seen) -> None:
        self.members.setdefault(seen.node, {}).setdefault(seen.namespace, set()).add(uid)

    def remove(self, uid: str, seen: Seen) -> None:
        on = self.members.get(seen.node)
        uids = on.get(seen.namespace) if on is not None else None
        if on is None or uids is None or uid not in uids:
            return
        uids.discard(uid)
        if not uids:
            del on[seen.namespace]
            if not on:
                del self.members[seen.node]

    def count(self, node: str, admits_namespace: Callable[[str], bool], gone: frozenset[str]) -> int:
        """The node's matching pods of the namespaces admitted, but those in `gone`."""
        total = 0
        for ns, uids in self.members.get(node, {}).items():
            if admits_namespace(ns):
                total += len(uids) - (sum(1 for uid in gone if uid in uids) if gone else 0)
        return total


class AntiGroup:
    """One distinct required anti-affinity term and, per node, how many times its pods carry it."""

    def __init__(self, term: Term) -> None:
        self.term = term
        self.on: dict[str, dict[str, int]] = {}  # node -> uid -> times
        self.total: dict[str, int] = {}  # node -> times

    def add(self, uid: str, node: str) -> None:
        on = self.on.setdefault(node, {})
        on[uid] = on.get(uid, 0) + 1
        self.total[node] = self.total.get(node, 0) + 1

    def remove(self, uid: str, node: str) -> None:
        on = self.on[node]
        self.total[node] -= on.pop(uid)
        if not on:
            del self.on[node], self.total[node]

    def holders(self, node: str, gone: frozenset[str]) -> int:
        """How many times the node's pods, but those in `gone`, carry the term."""
        n = self.total.get(node, 0)
        if n and gone:
            on = self.on[node]
            n -= sum(on.get(uid, 0) for uid in gone)
        return n


class PodIndex:
    def __init__(self) -> None:
        self._seen: dict[str, Seen] = {}  # uid -> where and what
        self._anti_keys: dict[str, list[str]] = {}  # uid -> its terms' keys
        self.pods: dict[str, dict[str, Obj]] = {}  # node -> uid -> pod
        self.anti: dict[str, dict[str, list[Term]]] = {}  # node -> uid -> required anti-affinity
        self.ports: dict[str, dict[str, list[hostports.Port]]] = {}  # node -> uid -> host ports
        self._groups: dict[str, AntiGroup] = {}  # term key -> the pods carrying it
        self._tallies: OrderedDict[tuple[bool, tuple[str, ...]], Tally] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def put(self, uid: str, node: str, pod: Obj) -> None:
        """The pod (its newest version) is on `node`."""
        meta = pod.get("metadata") or {}
        seen = Seen(node, namespace_of(pod), dict(labels_of(pod)), bool(meta.get("deletionTimestamp")))
        old = self._seen.get(uid)
        self._unplace(uid, retally=old != seen)
        self._seen[uid] = seen
        self.pods.setdefault(node, {})[uid] = pod
        terms = interpod.required_terms(pod, "podAntiAffinity")
        if terms:
            self.anti.setdefault(node, {})[uid] = terms
            keys = self._anti_keys[uid] = [term_key(t) for t in terms]
            for term, key in zip(terms, keys, strict=True):
                self._groups.setdefault(key, AntiGroup(term)).add(uid, node)
        ports = hostports.host_ports(pod)
        if ports:
            self.ports.setdefault(node, {})[uid] = ports
        if old != seen:
            for tally in self._tallies.values():
                if tally.admits(seen):
                    tally.add(uid, seen)

    def drop(self, uid: str) -> None:
        self._unplace(uid, retally=True)

    def _unplace(self, uid: str, retally: bool) -> None:
        seen = self._seen.pop(uid, None)
        if seen is None:
            return
        _remove(self.pods, seen.node, uid)
        _remove(self.anti, seen.node, uid)
        _remove(self.ports, seen.node, uid)
        for key in dict.fromkeys(self._anti_keys.pop(uid, ())):  # a term repeated: one group
            group = self._groups[key]
            group.remove(uid, seen.node)
            if not group.on:
                del self._groups[key]
        if retally:
            for tally in self._tallies.values():
                tally.remove(uid, seen)

    def anti_groups(self) -> Iterable[AntiGroup]:
        return self._groups.values()

    def needs_namespace_labels(self) -> bool:
        """Some existing pod's anti-affinity selects namespaces by label."""
        return any(g.term.needs_namespace_labels() for g in self._groups.values())

    def tally(self, selectors: tuple[Mapping[str, Any], ...], live_only: bool) -> Tally:
        """The tally of the pods matching all of `selectors`: kept, or built by one pass now."""
        key = (live_only, tuple(sorted({_canonical(s) for s in selectors})))
        found = self._tallies.get(key)
        if found is not None:
            self._tallies.move_to_end(key)
            return found
        tally = Tally(selectors, live_only)
        for uid, seen in self._seen.items():
            if tally.admits(seen):
                tally.add(uid, seen)
        self._tallies[key] = tally
        if len(self._tallies) > MAX_TALLIES:
            self._tallies.popitem(last=False)
        return tally
