"""policy/v1 PodDisruptionBudget: defaulting, validation and label-selector matching, as
kube-apiserver's policy API does them.

- Create (pkg/registry/policy/poddisruptionbudget strategy.go `PrepareForCreate`): the status is
  reset to the zero status (currentHealthy, desiredHealthy, disruptionsAllowed and expectedPods
  0, which policy/v1 always serializes) and generation is 1. The spec may be changed by updates
  (generation then increases; the disruption controller's `observedGeneration` follows).
- Validation (pkg/apis/policy/validation validation.go `ValidatePodDisruptionBudgetSpec`):
  minAvailable and maxUnavailable are not both set (upstream allows neither: such a budget
  never allows a disruption); each is a non-negative integer or a percent string `[0-9]+%` of at
  most 100% (apps validation `ValidatePositiveIntOrPercent`, `IsNotMoreThan100Percent`); the
  selector is a valid label selector (apimachinery `ValidateLabelSelector`);
  unhealthyPodEvictionPolicy is IfHealthyBudget or AlwaysAllow. A status write
  (`ValidatePodDisruptionBudgetStatusUpdate`): no count is negative.
- Selection (apimachinery `metav1.LabelSelectorAsSelector`): a null selector selects no pod, an
  empty one (`{}`) every pod of the namespace; a selector that does not parse selects none
  (eviction.go `getPodDisruptionBudgets`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import affinityvalidation, fielderrors, meta

PDBS_KEY = "poddisruptionbudgets.policy"
CONDITION = "DisruptionAllowed"
SUFFICIENT, INSUFFICIENT = "SufficientPods", "InsufficientPods"
UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")  # sets.List: sorted
_PERCENT = re.compile(r"^[0-9]+%$")
# apimachinery validation.go `IsValidPercent` (RegexError with the examples '1%' and '93%')
PERCENT_ERROR = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def default_pdb(pdb: Obj, old: Obj | None) -> None:
    """`PrepareForCreate`: the zero status on create (generation 1 comes with the resource type)."""
    if old is None:
        pdb["status"] = zero_status()


def zero_status() -> Obj:
    return {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}


def _int_or_percent_causes(value: Any, path: str) -> list[Cause]:
    """`ValidatePositiveIntOrPercent` then `IsNotMoreThan100Percent` (bad values are printed as
    JSON, as apimachinery's `field.Error.ErrorBody` prints an IntOrString)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return [
            fielderrors.invalid(
                path, fielderrors.Go(json.dumps(value)), "must be an integer or percentage (e.g '5%')"
            )
        ]
    if isinstance(value, int):
        return [] if value >= 0 else [fielderrors.invalid(path, value, "must be greater than or equal to 0")]
    if not _PERCENT.match(value):
        return [fielderrors.invalid(path, value, PERCENT_ERROR)]
    if int(value[:-1]) > 100:
        return [fielderrors.invalid(path, value, "must not be greater than 100%")]
    return []


def pdb_causes(pdb: Obj) -> list[Cause]:
    """`ValidatePodDisruptionBudget` (create and update alike: the spec is mutable)."""
    spec = fielderrors.mapping(pdb.get("spec"))
    causes: list[Cause] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        shown = fielderrors.Go(json.dumps(spec, separators=(",", ":")))
        causes.append(
            fielderrors.invalid("spec", shown, "minAvailable and maxUnavailable cannot be both set")
        )
    for field in ("minAvailable", "maxUnavailable"):
        if spec.get(field) is not None:
            causes += _int_or_percent_causes(spec[field], f"spec.{field}")
    causes += affinityvalidation.selector_causes(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        causes.append(
            fielderrors.not_supported(
                "spec.unhealthyPodEvictionPolicy", policy, UNHEALTHY_POD_EVICTION_POLICIES
            )
        )
    return causes + _status_causes(fielderrors.mapping(pdb.get("status")))


_STATUS_COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def _status_causes(status: Obj) -> list[Cause]:
    """`ValidatePodDisruptionBudgetStatusUpdate` (policy/v1): the counts are not negative. Checked
    on every write: a create resets the status and an update of the main resource keeps it."""
    return [
        fielderrors.invalid(f"status.{f}", status[f], "must be greater than or equal to 0")
        for f in _STATUS_COUNTS
        if isinstance(status.get(f), int) and status[f] < 0
    ]


def _requirement_holds(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool | None:
    """One matchExpression against a pod's labels; None when it does not parse."""
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if not isinstance(key, str) or not isinstance(values, list):
        return None
    if op == "In":
        return bool(values) and labels.get(key) in values
    if op == "NotIn":
        return bool(values) and labels.get(key) not in values
    if op == "Exists":
        return not values and key in labels
    if op == "DoesNotExist":
        return not values and key not in labels
    return None


def selects(selector: Any, labels: Mapping[str, str] | None) -> bool:
    """`LabelSelectorAsSelector(selector).Matches(labels)`, an unparsable selector matching nothing."""
    if not isinstance(selector, dict):
        return False
    labels = labels or {}
    match_labels = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(exprs, list):
        return False
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for expr in exprs:
        holds = _requirement_holds(expr, labels) if isinstance(expr, dict) else None
        if not holds:
            return False
    return True


def pdb_selects_pod(pdb: Obj, pod: Obj) -> bool:
    md = pod.get("metadata") or {}
    if (pdb.get("metadata") or {}).get("namespace") != md.get("namespace"):
        return False
    return selects((pdb.get("spec") or {}).get("selector"), md.get("labels"))


def is_pod_ready(pod: Obj) -> bool:
    """pkg/api/v1/pod `IsPodReady`: the Ready condition is True (the PDB notion of healthy)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def set_condition(status: Obj, cond: Obj, now: datetime) -> None:
    """apimachinery meta `SetStatusCondition`: lastTransitionTime changes with the status only."""
    conditions = status.setdefault("conditions", [])
    for existing in conditions:
        if existing.get("type") == cond["type"]:
            if existing.get("status") != cond["status"]:
                existing["lastTransitionTime"] = meta.timestamp(now)
            existing.update({k: v for k, v in cond.items() if k != "lastTransitionTime"})
            return
    conditions.append({**cond, "lastTransitionTime": meta.timestamp(now)})


def disruption_allowed_condition(status: Obj, now: datetime) -> None:
    """component-helpers `UpdateDisruptionAllowedCondition`."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    cond = {
        "type": CONDITION,
        "status": "True" if allowed else "False",
        "observedGeneration": int(status.get("observedGeneration") or 0),
        "reason": SUFFICIENT if allowed else INSUFFICIENT,
        "message": "",
    }
    set_condition(status, cond, now)
