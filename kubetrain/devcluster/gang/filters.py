"""Where the simulated gang schedulers place a gang's pods: kube-scheduler's filters, all or
nothing — pure.

Volcano's `predicates` plugin wraps kube-scheduler's Filter plugins, and the coscheduling plugin
runs inside kube-scheduler, so both place a pod only on a node that passes the filter chain the
simulated kube-scheduler runs (kubetrain.devcluster.kubelet `fit.filter_nodes` with
`placement.Placement`): NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and
required node affinity), NodePorts, NodeResourcesFit, PodTopologySpread (DoNotSchedule) and
InterPodAffinity. `place` takes the members in order; each placed member counts for the next
ones (its requests, host ports, labels and anti-affinity, as Volcano's session and
kube-scheduler's assumed pods do), and among the nodes that pass, the one with the most free CPU
is taken (earlier node first on a tie). The first member no node takes stops the attempt: nothing
of the gang is placed and `NoFit` names that pod and the scheduler's message for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubetrain.devcluster.gang.resources import TERMINAL, Resources, pod_requests, take
from kubetrain.devcluster.kubelet import fit
from kubetrain.devcluster.kubelet.interpod import Labels
from kubetrain.devcluster.kubelet.placement import Placement, PodIndex, needs_namespace_labels

Obj = dict[str, Any]
Placed = list[tuple[Obj, str]]


@dataclass(frozen=True)
class NoFit:
    """A gang member no node takes: the pod, the scheduler's message, and how many members
    before it were placed (Volcano's `Schedulable` tasks) and where (`before`: pod, node)."""

    pod: Obj
    message: str
    schedulable: int
    before: tuple[tuple[Obj, str], ...] = ()


def _uid(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("uid", ""))


def pod_index(pods: Iterable[Obj], assumed: Mapping[str, tuple[str, Resources]]) -> PodIndex:
    """The unfinished pods bound (or assumed bound by the gang scheduler) to a node, by node."""
    index = PodIndex()
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName") or (assumed.get(_uid(pod)) or ("", {}))[0]
        if node and str((pod.get("status") or {}).get("phase") or "") not in TERMINAL:
            index.put(_uid(pod), str(node), pod)
    return index


def wants_namespace_labels(pods: Iterable[Obj], index: PodIndex) -> bool:
    """A pending pod's, or an existing pod's anti-affinity, terms select namespaces by label."""
    return index.needs_namespace_labels() or any(needs_namespace_labels(p) for p in pods)


@dataclass
class Cluster:
    """One scheduling cycle's view: the Nodes (in the simulator's node order), the pods on them
    (`index`, grown by what the cycle places), each node's unfinished pods (the preemption dry
    run of the message) and the Namespaces' labels."""

    nodes: list[Obj]
    index: PodIndex
    bound: dict[str, list[Obj]]
    ns_labels: Mapping[str, Labels]
    volcano: bool

    def place(self, pods: list[Obj], free: dict[str, Resources]) -> Placed | NoFit:
        """A node for every pod, taken from `free` and added to `index`; else nothing changes."""
        trial = {node: dict(res) for node, res in free.items()}
        order = {str(n["metadata"]["name"]): i for i, n in enumerate(self.nodes)}
        placed: Placed = []
        for pod in pods:
            others = Placement(pod, self.nodes, self.index, self.ns_labels, fit.node_matches)
            reasons = fit.filter_nodes(pod, self.nodes, trial, others)
            fitting = [name for name, why in reasons.items() if not why]
            if not fitting:
                for member, _ in placed:
                    self.index.drop(_uid(member))
                return NoFit(pod, self._message(pod, reasons, trial, others), len(placed), tuple(placed))
            node = max(fitting, key=lambda n: (trial[n].get("cpu", Fraction(0)), -order[n]))
            take(trial[node], pod_requests(pod))
            self.index.put(_uid(pod), node, pod)
            placed.append((pod, node))
        free.update(trial)
        return placed

    def _message(
        self, pod: Obj, reasons: dict[str, list[str]], free: Mapping[str, Resources], others: Placement
    ) -> str:
        if self.volcano:  # Volcano's FitErrors: the nodes' reasons, no preemption dry run
            return f"0/{len(reasons)} nodes are unavailable: {fit.histogram(reasons.values())}."
        return fit.fit_error(pod, reasons, free, self.bound, others)
