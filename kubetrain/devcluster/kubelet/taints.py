"""Taints and tolerations as kube-scheduler's NodeUnschedulable and TaintToleration Filter plugins
apply them — pure.

- `tolerates(toleration, taint)` is k8s.io/api core/v1 `Toleration.ToleratesTaint`: a toleration
  with an effect matches only that effect (an empty effect matches every effect), one with a key
  only that key (an empty key matches every key); operator `Exists` matches any value, `Equal`
  (also the empty operator) only the taint's value, any other operator nothing.
- `untolerated_taint(taints, tolerations)` is component-helpers `FindMatchingUntoleratedTaint`
  with TaintToleration's `DoNotScheduleTaintsFilterFunc`: the first NoSchedule or NoExecute taint
  no toleration matches (PreferNoSchedule only scores, it never filters).
- `node_reason(pod, node)` runs NodeUnschedulable (plugins/nodeunschedulable `Filter`: a node with
  `spec.unschedulable` — `kubectl cordon` — takes only a pod tolerating the
  `node.kubernetes.io/unschedulable:NoSchedule` taint; reason `ErrReasonUnschedulable`) then
  TaintToleration (plugins/tainttoleration `Filter`: reason `node(s) had untolerated taint
  {<key>: <value>}`), the default profile's filter order. Both fail a node
  UnschedulableAndUnresolvable: preemption cannot help there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_REASON = "node(s) were unschedulable"  # nodeunschedulable.ErrReasonUnschedulable
UNTOLERATED_PREFIX = "node(s) had untolerated taint "
FILTERING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """core/v1 `Toleration.ToleratesTaint`."""
    effect, key = str(toleration.get("effect") or ""), str(toleration.get("key") or "")
    if effect and effect != str(taint.get("effect") or ""):
        return False
    if key and key != str(taint.get("key") or ""):
        return False
    operator = str(toleration.get("operator") or "")
    if operator in ("", "Equal"):
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return operator == "Exists"


def _dicts(items: Any) -> list[Mapping[str, Any]]:
    return [i for i in items or () if isinstance(i, Mapping)]


def tolerated(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """component-helpers `TolerationsTolerateTaint`: some toleration matches the taint."""
    return any(tolerates(t, taint) for t in tolerations)


def untolerated_taint(taints: Any, tolerations: Any) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint none of the tolerations matches, None if none."""
    allowed = _dicts(tolerations)
    for taint in _dicts(taints):
        if str(taint.get("effect") or "") in FILTERING_EFFECTS and not tolerated(allowed, taint):
            return taint
    return None


def taint_reason(taint: Mapping[str, Any]) -> str:
    """TaintToleration's reason for a node with `taint` (its `fmt.Sprintf("...{%s: %s}")`)."""
    return f"{UNTOLERATED_PREFIX}{{{taint.get('key') or ''}: {taint.get('value') or ''}}}"


def unresolvable(reason: str) -> bool:
    """A reason these plugins give (UnschedulableAndUnresolvable: evicting pods cannot help)."""
    return reason == UNSCHEDULABLE_REASON or reason.startswith(UNTOLERATED_PREFIX)


def node_reason(pod: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    """Why NodeUnschedulable or TaintToleration rejects the node for the pod; None: they pass it."""
    tolerations = _dicts((pod.get("spec") or {}).get("tolerations"))
    spec = node.get("spec") or {}
    if spec.get("unschedulable") is True and not tolerated(
        tolerations, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    ):
        return UNSCHEDULABLE_REASON
    taint = untolerated_taint(spec.get("taints"), tolerations)
    return None if taint is None else taint_reason(taint)
