"""The taints kube-controller-manager's node lifecycle controller keeps on Nodes (pkg/controller/
nodelifecycle node_lifecycle_controller.go), decided here — pure — and written by the pod
simulator when its Node watch shows a change (`NodeTaints`).

- `doNoScheduleTaintingPass`: a node's NoSchedule taints mirror its conditions
  (`nodeConditionToTaintKeyStatusMap`: Ready False → `node.kubernetes.io/not-ready`, Ready Unknown
  → `node.kubernetes.io/unreachable`, MemoryPressure/DiskPressure/PIDPressure/NetworkUnavailable
  True → `node.kubernetes.io/memory-pressure` …) and its cordon (`spec.unschedulable` →
  `node.kubernetes.io/unschedulable`); such taints that no longer apply are removed, others'
  taints are left alone (`TaintSetDiff` by key and effect).
- `processTaintBaseEviction` + `doNoExecuteTaintingPass`: Ready False → the
  `node.kubernetes.io/not-ready:NoExecute` taint (and not the unreachable one), Ready Unknown → the
  `node.kubernetes.io/unreachable:NoExecute` taint (and not the not-ready one), Ready True → neither
  (`markNodeAsReachable`); a node without a Ready condition keeps what it has.
- `SwapNodeControllerTaint`: taints added carry `timeAdded` (now) and go after the node's others.

A node whose kubelet stops renewing its Lease is marked Unknown by the health monitor
(`nodehealth.py`); these taints follow from that as from any other write of its conditions.
Not followed: the NoExecute tainting is not rate limited per zone (`--node-eviction-rate`): it is
applied at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
CONDITION_TAINTS: dict[str, dict[str, str]] = {  # nodeConditionToTaintKeyStatusMap
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
CONDITION_TAINT_KEYS = frozenset(k for by_status in CONDITION_TAINTS.values() for k in by_status.values())


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """core/v1 `Taint.MatchTaint`: the same key and effect."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def _conditions(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = (node.get("status") or {}).get("conditions") or []
    return [c for c in items if isinstance(c, Mapping)]


def wanted_no_schedule(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The controller's NoSchedule taints the node should have."""
    out = []
    for cond in _conditions(node):
        key = CONDITION_TAINTS.get(str(cond.get("type")), {}).get(str(cond.get("status")))
        if key:
            out.append({"key": key, "effect": "NoSchedule"})
    if (node.get("spec") or {}).get("unschedulable") is True:
        out.append({"key": UNSCHEDULABLE, "effect": "NoSchedule"})
    return out


def no_execute_swap(node: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(NoExecute taints to add, to remove) for the node's Ready condition."""
    ready = next((c for c in _conditions(node) if c.get("type") == "Ready"), None)
    not_ready = {"key": NOT_READY, "effect": "NoExecute"}
    unreachable = {"key": UNREACHABLE, "effect": "NoExecute"}
    status = None if ready is None else ready.get("status")
    if status == "False":
        return [not_ready], [unreachable]
    if status == "Unknown":
        return [unreachable], [not_ready]
    if status == "True":
        return [], [not_ready, unreachable]
    return [], []


def reconciled_taints(node: Mapping[str, Any], now: datetime) -> list[dict[str, Any]] | None:
    """The node's `spec.taints` with the controller's taints brought up to date; None when they
    already are."""
    current = [dict(t) for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
    managed = [
        t
        for t in current
        if t.get("effect") == "NoSchedule"
        and (t.get("key") == UNSCHEDULABLE or t.get("key") in CONDITION_TAINT_KEYS)
    ]
    wanted = wanted_no_schedule(node)
    add = [t for t in wanted if not any(_same(t, m) for m in managed)]
    remove = [m for m in managed if not any(_same(t, m) for t in wanted)]
    add_ne, remove_ne = no_execute_swap(node)
    add += [t for t in add_ne if not any(_same(t, c) for c in current)]
    remove += [t for t in remove_ne if any(_same(t, c) for c in current)]
    if not add and not remove:
        return None
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    kept = [t for t in current if not any(_same(t, r) for r in remove)]
    return kept + [{**t, "timeAdded": stamp} for t in add]
