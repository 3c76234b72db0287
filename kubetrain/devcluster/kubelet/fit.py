"""Where the simulated scheduler may bind a pod, and what it says when nowhere — pure.

`filter_nodes(pod, nodes, free, bound)` runs kube-scheduler's Filter plugins that the simulated
scheduler plays, in the default profile's order, stopping at a node's first failing plugin as
the framework does (`frameworkImpl.RunFilterPlugins`):

- NodeUnschedulable and TaintToleration (`taints.py`): a cordoned node (`spec.unschedulable`)
  takes only a pod tolerating `node.kubernetes.io/unschedulable:NoSchedule` — reason
  `node(s) were unschedulable` —, a node with a NoSchedule/NoExecute taint the pod does not
  tolerate none — reason `node(s) had untolerated taint {<key>: <value>}`;
- NodeAffinity (plugins/nodeaffinity `Filter`, component-helpers `GetRequiredNodeAffinity`):
  `spec.nodeSelector` against the node's labels and the required node affinity's
  `nodeSelectorTerms` — the terms ORed, a term's requirements ANDed; `matchExpressions`
  In/NotIn/Exists/DoesNotExist/Gt/Lt on labels, `matchFields` on `metadata.name`
  (`nodeaffinity.NewNodeSelector`); a term without requirements matches nothing. Reason
  `node(s) didn't match Pod's node affinity/selector` (`ErrReasonPod`);
- NodePorts (`placement.py` `before_fit`, `hostports.py`): reason `node(s) didn't have free
  ports for the requested pod ports`;
- NodeResourcesFit (plugins/noderesources `fitsRequest`): `Too many pods` when the node's
  `pods` slots are taken, then `Insufficient <resource>` for each resource the pod requests
  (gang/resources.py `pod_requests`: max(init containers), sum(containers), overhead) more of
  than the node's allocatable minus the requests of its unfinished pods;
- PodTopologySpread and InterPodAffinity (`placement.py` `after_fit`, `spread.py`,
  `interpod.py`).

`fit_error(...)` is kube-scheduler's message for a pod no node takes (framework `FitError.Error`):
`0/N nodes are available: <count reason, sorted>.` then DefaultPreemption's PostFilter message
(`Evaluator.Preempt`, `nodesWherePreemptionMightHelp`, `SelectVictimsOnNode`): a node failing
NodeUnschedulable, TaintToleration, NodeAffinity, InterPodAffinity's pod affinity or
PodTopologySpread's missing label (UnschedulableAndUnresolvable) is `Preemption is not helpful
for scheduling`, a node
whose unfinished pods all have the pod's priority or more `No preemption victims found for
incoming pod`; a pod with `preemptionPolicy: Never` `not eligible due to preemptionPolicy=Never.`
Elsewhere the filters run again with the node's lower-priority pods gone (`SelectVictimsOnNode`),
NodePorts, NodeResourcesFit, PodTopologySpread and InterPodAffinity alike. Where evicting them
would make room, kube-scheduler would preempt them: the simulated scheduler does not, and names
the node's reasons as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Protocol

from kubetrain.devcluster.gang.resources import Resources, add, pod_requests
from kubetrain.devcluster.kubelet import interpod, spread, taints

Obj = dict[str, Any]

AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER_PREEMPTS = "not eligible due to preemptionPolicy=Never."
UNRESOLVABLE = frozenset({AFFINITY_REASON, interpod.AFFINITY_REASON, spread.LABEL_REASON})


class Others(Protocol):
    """The filters that read the other pods (`placement.Placement`)."""

    def before_fit(self, node: str) -> str | None: ...

    def after_fit(self, node: str) -> str | None: ...

    def without(self, uids: frozenset[str]) -> Others: ...


def _labels(node: Obj) -> Mapping[str, Any]:
    return (node.get("metadata") or {}).get("labels") or {}


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _requirement(req: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """One NodeSelectorRequirement (labels.Selector semantics: a missing key fails In, Gt, Lt
    and Exists and passes NotIn and DoesNotExist; Gt/Lt compare one integer value)."""
    key, op = str(req.get("key", "")), req.get("operator")
    wanted = [str(v) for v in req.get("values") or ()]
    has = key in values
    value = str(values.get(key, ""))
    if op == "In":
        return has and value in wanted
    if op == "NotIn":
        return not has or value not in wanted
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and len(wanted) == 1:
        mine, bound = _int(value), _int(wanted[0])
        if mine is None or bound is None:
            return False
        return mine > bound if op == "Gt" else mine < bound
    return False


def _term(term: Mapping[str, Any], node: Obj) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    name = {"metadata.name": (node.get("metadata") or {}).get("name", "")}
    return all(_requirement(r, _labels(node)) for r in exprs) and all(_requirement(r, name) for r in fields)


def node_matches(pod: Obj, node: Obj) -> bool:
    """NodeAffinity's Filter: the pod's nodeSelector and required node affinity accept the node."""
    spec = pod.get("spec") or {}
    labels = _labels(node)
    for key, value in (spec.get("nodeSelector") or {}).items():
        if key not in labels or str(labels[key]) != str(value):
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if required and terms is not None:
        return any(_term(t, node) for t in terms)
    return True


def resource_reasons(need: Mapping[str, Fraction], free: Mapping[str, Fraction]) -> list[str]:
    """NodeResourcesFit's reasons on one node (empty: the pod fits)."""
    reasons = [TOO_MANY_PODS] if need.get("pods", Fraction(0)) > free.get("pods", Fraction(0)) else []
    for name in sorted(need):
        if name != "pods" and need[name] > 0 and need[name] > free.get(name, Fraction(0)):
            reasons.append(f"Insufficient {name}")
    return reasons


def filter_nodes(
    pod: Obj, nodes: list[Obj], free: Mapping[str, Resources], others: Others | None = None
) -> dict[str, list[str]]:
    """Each node's reasons the pod cannot go there, in `nodes`' order (empty list: it fits)."""
    need = pod_requests(pod)
    out: dict[str, list[str]] = {}
    for node in nodes:
        name = str(node["metadata"]["name"])
        why = taints.node_reason(pod, node)
        if why is None and not node_matches(pod, node):
            why = AFFINITY_REASON
        if why is None and others is not None:
            why = others.before_fit(name)
        if why is not None:
            out[name] = [why]
            continue
        out[name] = resource_reasons(need, free[name])
        if not out[name] and others is not None:
            later = others.after_fit(name)
            out[name] = [later] if later is not None else []
    return out


def _priority(pod: Obj) -> int:
    return _int((pod.get("spec") or {}).get("priority") or 0) or 0


def histogram(statuses: Iterable[list[str]]) -> str:
    """Each reason with its count, `N reason`, sorted and comma-separated (FitError's histogram)."""
    counts: dict[str, int] = {}
    for reasons in statuses:
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def _uid(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("uid", ""))


def fit_error(
    pod: Obj,
    reasons: Mapping[str, list[str]],
    free: Mapping[str, Resources],
    bound: Mapping[str, list[Obj]],
    others: Others | None = None,
) -> str:
    """kube-scheduler's FailedScheduling message for a pod that fits on none of `reasons`' nodes;
    `bound`: each node's unfinished pods (for the preemption dry run)."""
    message = f"0/{len(reasons)} nodes are available: {histogram(reasons.values())}."
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        return f"{message} preemption: {NEVER_PREEMPTS}"
    need, mine = pod_requests(pod), _priority(pod)
    after: list[list[str]] = []
    for node, why in reasons.items():
        if len(why) == 1 and (why[0] in UNRESOLVABLE or taints.unresolvable(why[0])):
            after.append([NOT_HELPFUL])
            continue
        victims = [p for p in bound.get(node, ()) if _priority(p) < mine]
        if not victims:
            after.append([NO_VICTIMS])
            continue
        rest = others.without(frozenset(map(_uid, victims))) if others is not None else None
        ports = rest.before_fit(node) if rest is not None else None
        if ports is not None:
            after.append([ports])
            continue
        room = dict(free[node])
        for victim in victims:
            add(room, pod_requests(victim))
        short = resource_reasons(need, room)
        later = rest.after_fit(node) if rest is not None and not short else None
        after.append(short or ([later] if later is not None else why))
    return f"{message} preemption: 0/{len(reasons)} nodes are available: {histogram(after)}."


def unschedulable_status(pod: Obj, message: str, stamp: str, reason: str = "Unschedulable") -> Obj | None:
    """The pod's status with `PodScheduled=False`, reason `Unschedulable` (or `reason`: Volcano
    also writes `Schedulable`), as kube-scheduler's `updatePod` writes it
    (podutil.UpdatePodCondition: lastTransitionTime kept while the status stays False); None when
    the condition already says so (no write: UpdatePodCondition's comparison leaves
    observedGeneration out). The condition observes the pod's generation
    (`podutil.CalculatePodConditionObservedGeneration` in `handleSchedulingFailure`)."""
    status = dict(pod.get("status") or {})
    conditions = [c for c in status.get("conditions") or () if isinstance(c, dict)]
    old = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
    if old and old.get("status") == "False" and old.get("reason") == reason and old.get("message") == message:
        return None
    since = old.get("lastTransitionTime") if old and old.get("status") == "False" else None
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": since or stamp,
        "reason": reason,
        "message": message,
    }
    generation = (pod.get("metadata") or {}).get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool) and generation > 0:
        condition["observedGeneration"] = generation
    status["conditions"] = [c for c in conditions if c.get("type") != "PodScheduled"] + [condition]
    status.setdefault("phase", "Pending")
    return status
