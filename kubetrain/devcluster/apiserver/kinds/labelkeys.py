"""A Pod's `matchLabelKeys`/`mismatchLabelKeys`, merged into its label selectors on create.

pkg/registry/core/pod strategy `PrepareForCreate` (MatchLabelKeysInPodAffinity, GA;
MatchLabelKeysInPodTopologySpreadSelectorMerge, on by default): for each pod affinity and
anti-affinity term, required and preferred, that has a `labelSelector`, each `matchLabelKeys` key
the pod's labels carry adds `key In (value)` and each `mismatchLabelKeys` key `key NotIn (value)`
to the selector's `matchExpressions`; for each topology spread constraint with a
`labelSelector`, each `matchLabelKeys` key the pod carries adds `key In (value)`. Keys the pod
does not carry add nothing; the key lists stay as written. Only on create: a label changed later
does not change the selectors (the scheduler reads only `labelSelector`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _merge(selector: Any, keys: Any, operator: str, labels: Mapping[str, Any]) -> None:
    for key in keys or ():
        if isinstance(key, str) and key in labels:
            exprs = selector.get("matchExpressions")
            if not isinstance(exprs, list):
                exprs = selector["matchExpressions"] = []
            exprs.append({"key": key, "operator": operator, "values": [str(labels[key])]})


def _term(term: Any, labels: Mapping[str, Any]) -> None:
    if not isinstance(term, dict) or not isinstance(term.get("labelSelector"), dict):
        return
    _merge(term["labelSelector"], term.get("matchLabelKeys"), "In", labels)
    _merge(term["labelSelector"], term.get("mismatchLabelKeys"), "NotIn", labels)


def apply_label_keys(pod: Obj) -> None:
    """Merge the pod's label keys into its selectors (in place), as the API server does on create."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    if not labels or not isinstance(spec, dict):
        return
    affinity = _dict(spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        part = _dict(affinity.get(kind))
        for term in part.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
            _term(term, labels)
        for weighted in part.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
            if isinstance(weighted, dict):
                _term(weighted.get("podAffinityTerm"), labels)
    for constraint in spec.get("topologySpreadConstraints") or ():
        if isinstance(constraint, dict) and isinstance(constraint.get("labelSelector"), dict):
            _merge(constraint["labelSelector"], constraint.get("matchLabelKeys"), "In", labels)
