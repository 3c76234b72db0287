"""kube-scheduler's PodTopologySpread Filter plugin — pure.

Read from kube-scheduler (plugins/podtopologyspread `filtering.go`, `common.go`):

- Only the pod's `whenUnsatisfiable: DoNotSchedule` constraints filter (ScheduleAnyway only
  scores, and the simulated scheduler does not score); the cluster's default constraints are
  ScheduleAnyway, so a pod without DoNotSchedule constraints is not checked.
- `prefilter` counts, per constraint and topology value, the existing pods of the pod's namespace
  that match the constraint's `labelSelector` and are not being deleted, on the eligible nodes:
  a node carrying every constraint's topology key and — per constraint — passing the pod's
  nodeSelector and required node affinity (`nodeAffinityPolicy`, default Honor) and, with
  `nodeTaintsPolicy: Honor` (default Ignore), having no NoSchedule/NoExecute taint the pod does
  not tolerate (each node's count read from the scheduler's cache, kept as pods come and go).
  `matchLabelKeys` is not read here: the API server merged it into
  `labelSelector` when the pod was created. A selector without requirements counts no pod.
- `reason(state, node)`: a node without a constraint's topology key is `node(s) didn't match pod
  topology spread constraints (missing required label)` (UnschedulableAndUnresolvable); else a
  node where `count(value) + (1 if the pod matches the selector) - global minimum > maxSkew` is
  `node(s) didn't match pod topology spread constraints` (Unschedulable). The global minimum is
  the least count over the eligible domains, 0 while there are fewer domains than `minDomains`
  (default 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.devcluster.kubelet import taints
from kubetrain.devcluster.kubelet.interpod import labels_of, namespace_of, selector_empty, selector_matches

Obj = dict[str, Any]

REASON = "node(s) didn't match pod topology spread constraints"
LABEL_REASON = REASON + " (missing required label)"


@dataclass(frozen=True)
class Constraint:
    max_skew: int
    topology_key: str
    selector: Any
    min_domains: int
    honor_node_affinity: bool
    honor_taints: bool


def constraints(pod: Mapping[str, Any]) -> list[Constraint]:
    """The pod's DoNotSchedule constraints."""
    out = []
    for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or ():
        if isinstance(c, Mapping) and c.get("whenUnsatisfiable") == "DoNotSchedule":
            out.append(
                Constraint(
                    int(c.get("maxSkew") or 0),
                    str(c.get("topologyKey") or ""),
                    c.get("labelSelector"),
                    int(c.get("minDomains") or 1),
                    c.get("nodeAffinityPolicy") in (None, "Honor"),
                    c.get("nodeTaintsPolicy") == "Honor",
                )
            )
    return out


@dataclass
class State:
    pod: Obj
    constraints: list[Constraint]
    counts: list[dict[str, int]]  # per constraint: topology value -> matching pods

    def minimum(self, i: int) -> int | None:
        """The global minimum of constraint `i`; None when no domain is eligible."""
        counts = self.counts[i]
        if len(counts) < self.constraints[i].min_domains:
            return 0
        return min(counts.values()) if counts else None


def prefilter(
    pod: Obj,
    nodes: Iterable[Obj],
    matching: Callable[[str, Any], Callable[[str], int]],
    node_matches: Callable[[Obj, Obj], bool],
) -> State | None:
    """The counts over the eligible nodes; None when the pod has no DoNotSchedule constraint.
    `matching(namespace, selector)`: node name -> how many of its pods of `namespace` not being
    deleted match `selector` (the scheduler's cache, `podindex.py`); `node_matches(pod, node)`:
    NodeAffinity's nodeSelector and required node affinity."""
    cs = constraints(pod)
    if not cs:
        return None
    state = State(pod, cs, [{} for _ in cs])
    namespace, tolerations = namespace_of(pod), (pod.get("spec") or {}).get("tolerations")
    # A selector without requirements counts no pod (kube-scheduler skips it).
    per_node = [None if selector_empty(c.selector) else matching(namespace, c.selector) for c in cs]
    for node in nodes:
        node_labels = labels_of(node)
        if not all(c.topology_key in node_labels for c in cs):
            continue
        name, affinity_ok = str(node["metadata"]["name"]), None
        for i, c in enumerate(cs):
            if c.honor_node_affinity:
                affinity_ok = node_matches(pod, node) if affinity_ok is None else affinity_ok
                if not affinity_ok:
                    continue
            node_taints = (node.get("spec") or {}).get("taints")
            if c.honor_taints and taints.untolerated_taint(node_taints, tolerations):
                continue
            value, counts, count = str(node_labels[c.topology_key]), state.counts[i], per_node[i]
            counts[value] = counts.get(value, 0) + (count(name) if count is not None else 0)
    return state


def reason(state: State, node: Obj) -> str | None:
    """Why PodTopologySpread's Filter rejects the node; None: it passes."""
    node_labels, pod_labels = labels_of(node), labels_of(state.pod)
    for i, c in enumerate(state.constraints):
        if c.topology_key not in node_labels:
            return LABEL_REASON
        minimum = state.minimum(i)
        if minimum is None:
            continue
        own = 1 if selector_matches(c.selector, pod_labels) else 0
        if state.counts[i].get(str(node_labels[c.topology_key]), 0) + own - minimum > c.max_skew:
            return REASON
    return None
