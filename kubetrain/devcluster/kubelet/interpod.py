"""kube-scheduler's InterPodAffinity Filter plugin — pure.

Read from kube-scheduler (plugins/interpodaffinity `filtering.go`, framework `AffinityTerm`):

- A required term (`requiredDuringSchedulingIgnoredDuringExecution` of `podAffinity` or
  `podAntiAffinity`) matches a pod when the pod's namespace is one of the term's `namespaces`
  (none listed and no `namespaceSelector`: the term's own pod's namespace) or its Namespace's
  labels match `namespaceSelector`, and the pod's labels match `labelSelector`
  (`metav1.LabelSelectorAsSelector`: an absent selector matches nothing, `{}` everything).
  `matchLabelKeys`/`mismatchLabelKeys` are not read here: the API server merged them into
  `labelSelector` when the pod was created.
- `prefilter` counts, per topology pair (key, value) of the nodes holding existing pods:
  the pods matching ALL of the incoming pod's affinity terms (one count per term key), the pods
  matching each of its anti-affinity terms, and the existing pods' own required anti-affinity
  terms that match the incoming pod. A node without a term's topology key counts nothing. The
  per-node counts come from the scheduler's cache (`Counts`: `podindex.py` keeps them as pods
  come and go), so an attempt costs per node and per distinct term, not per existing pod.
- `reason(state, node)`: affinity first — the node must carry every term's topology key
  (else the reason at once) and each pair must count a pod, except for the first pod of a group
  with affinity to itself (no pod anywhere matches and the pod matches all its own terms):
  `node(s) didn't match pod affinity rules` (UnschedulableAndUnresolvable); then the pod's
  anti-affinity: `node(s) didn't match pod anti-affinity rules`; then the existing pods'
  anti-affinity on any of the node's label pairs: `node(s) didn't satisfy existing pods
  anti-affinity rules` (both Unschedulable: evicting pods may help).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Obj = dict[str, Any]
Labels = Mapping[str, Any]
Pair = tuple[str, str]

AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"


def labels_of(obj: Mapping[str, Any]) -> Labels:
    return (obj.get("metadata") or {}).get("labels") or {}


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _expression(req: Mapping[str, Any], labels: Labels) -> bool:
    key, op = str(req.get("key", "")), req.get("operator")
    has = key in labels
    values = [str(v) for v in req.get("values") or ()]
    if op == "In":
        return has and str(labels[key]) in values
    if op == "NotIn":
        return not has or str(labels[key]) not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    return False


def selector_matches(selector: Any, labels: Labels) -> bool:
    """`metav1.LabelSelectorAsSelector(selector).Matches(labels)`: None matches nothing."""
    if not isinstance(selector, Mapping):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if key not in labels or str(labels[key]) != str(value):
            return False
    exprs = selector.get("matchExpressions") or ()
    return all(_expression(r, labels) for r in exprs if isinstance(r, Mapping))


def selector_empty(selector: Any) -> bool:
    """`labels.Selector.Empty()`: a selector without requirements (`{}`), not an absent one."""
    if not isinstance(selector, Mapping):
        return False
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


@dataclass(frozen=True)
class Term:
    namespaces: frozenset[str]
    namespace_selector: Any  # None: no namespace by labels
    selector: Any
    topology_key: str

    def admits_namespace(self, ns: str, ns_labels: Mapping[str, Labels]) -> bool:
        """A pod of namespace `ns` may match: `ns` is listed or its labels match `namespaceSelector`."""
        if ns in self.namespaces:
            return True
        chosen = self.namespace_selector
        return chosen is not None and selector_matches(chosen, ns_labels.get(ns, {}))

    def matches(self, pod: Mapping[str, Any], ns_labels: Mapping[str, Labels]) -> bool:
        if self.admits_namespace(namespace_of(pod), ns_labels):
            return selector_matches(self.selector, labels_of(pod))
        return False

    def needs_namespace_labels(self) -> bool:
        return self.namespace_selector is not None and not selector_empty(self.namespace_selector)


def required_terms(pod: Mapping[str, Any], kind: str) -> list[Term]:
    """The pod's required terms of `kind` (`podAffinity` or `podAntiAffinity`)."""
    affinity = (pod.get("spec") or {}).get("affinity")
    if not affinity:
        return []
    part = affinity.get(kind) or {}
    own = namespace_of(pod)
    out = []
    for term in part.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        if not isinstance(term, Mapping):
            continue
        names, ns_selector = term.get("namespaces") or [], term.get("namespaceSelector")
        namespaces = frozenset([own]) if not names and ns_selector is None else frozenset(map(str, names))
        key = str(term.get("topologyKey") or "")
        out.append(Term(namespaces, ns_selector, term.get("labelSelector"), key))
    return out


def _count(counts: dict[Pair, int], node_labels: Labels, key: str, n: int) -> None:
    if n > 0 and key in node_labels:
        pair = (key, str(node_labels[key]))
        counts[pair] = counts.get(pair, 0) + n


@dataclass
class State:
    pod: Obj
    affinity: list[Term]
    anti: list[Term]
    ns_labels: Mapping[str, Labels]
    affinity_counts: dict[Pair, int] = field(default_factory=dict)
    anti_counts: dict[Pair, int] = field(default_factory=dict)
    existing_anti_counts: dict[Pair, int] = field(default_factory=dict)


PerNode = Callable[[str], int]


class Counts(Protocol):
    """The existing pods as the cache counts them (`podindex.PodIndex` through `placement.py`)."""

    def matching(self, terms: Sequence[Term]) -> PerNode:
        """Node name -> how many of its pods match every one of `terms` (namespace and labels)."""
        ...

    def existing_anti(self) -> Iterable[tuple[Term, PerNode]]:
        """Each distinct required anti-affinity term of the existing pods, with node name -> how
        many times its pods carry it."""
        ...


def prefilter(
    pod: Obj, nodes: Iterable[Obj], counts: Counts, ns_labels: Mapping[str, Labels]
) -> State | None:
    """The counts over every node's existing pods; None when the plugin has nothing to check
    (the pod has no required terms and no existing pod has required anti-affinity)."""
    state = State(pod, required_terms(pod, "podAffinity"), required_terms(pod, "podAntiAffinity"), ns_labels)
    existing = list(counts.existing_anti())
    # Each distinct existing term is matched against the pod once, not once per pod carrying it.
    matched = [(t.topology_key, holders) for t, holders in existing if t.matches(pod, ns_labels)]
    together = counts.matching(state.affinity) if state.affinity else None
    antis = [(t.topology_key, counts.matching([t])) for t in state.anti]
    found = False
    for node in nodes:
        name, node_labels = str(node["metadata"]["name"]), labels_of(node)
        found = found or any(holders(name) > 0 for _, holders in existing)
        for key, holders in matched:
            _count(state.existing_anti_counts, node_labels, key, holders(name))
        if together is not None:
            n = together(name)
            for term in state.affinity:
                _count(state.affinity_counts, node_labels, term.topology_key, n)
        for key, matching in antis:
            _count(state.anti_counts, node_labels, key, matching(name))
    return state if found or state.affinity or state.anti else None


def _satisfies_affinity(state: State, node_labels: Labels) -> bool:
    pods_exist = True
    for term in state.affinity:
        if term.topology_key not in node_labels:
            return False
        if state.affinity_counts.get((term.topology_key, str(node_labels[term.topology_key])), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself: nothing matches anywhere yet.
    return not state.affinity_counts and all(t.matches(state.pod, state.ns_labels) for t in state.affinity)


def reason(state: State, node: Obj) -> str | None:
    """Why InterPodAffinity's Filter rejects the node; None: it passes."""
    node_labels = labels_of(node)
    if not _satisfies_affinity(state, node_labels):
        return AFFINITY_REASON
    if state.anti_counts:
        for term in state.anti:
            key = term.topology_key
            if key in node_labels and state.anti_counts.get((key, str(node_labels[key])), 0) > 0:
                return ANTI_AFFINITY_REASON
    if state.existing_anti_counts:
        for key, value in node_labels.items():
            if state.existing_anti_counts.get((key, str(value)), 0) > 0:
                return EXISTING_ANTI_AFFINITY_REASON
    return None
