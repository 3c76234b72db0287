"""A Pod's `matchLabelKeys`/`mismatchLabelKeys`, merged into its label selectors on create.

pkg/registry/core/pod strategy `PrepareForCreate` (MatchLabelKeysInPodAffinity, GA;
MatchLabelKeysInPodTopologySpreadSelectorMerge, on by default): for each pod affinity and
anti-affinity term, required and preferred, that has a `labelSelector`, each `matchLabelKeys` key
the pod's labels carry adds `key In (value)` and each `mismatchLabelKeys` key `key NotIn (value)`
to the selector's `matchExpressions`; for each topology spread constraint with a
`labelSelector`, each `matchLabelKeys` key the pod carries adds `key In (value)`. Keys the pod
does not carry add nothing; the key lists stay as written. Only on create: a label changed later
does not change the selectors (the scheduler reads only `labelSelector`).

Validation (`label_key_causes`, called from affinityvalidation.py for pod specs and templates):
each key a label name, forbidden without a `labelSelector`, a key in both lists refused, a
`matchLabelKeys` key the (merged) selector repeats refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import forbidden, invalid
from kubetrain.devcluster.apiserver.kinds.objectmeta import qualified_name_problems

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


def _keys(value: Any) -> list[str]:
    return [k if isinstance(k, str) else "" for k in value] if isinstance(value, list) else []


def _key_list_causes(path: str, keys: list[str], selector: Any) -> list[Cause]:
    """validation.go `validateLabelKeys`: forbidden without a labelSelector, else each a label name."""
    if not keys:
        return []
    if not isinstance(selector, dict):
        return [forbidden(path, "must not be specified when labelSelector is not set")]
    return [
        invalid(f"{path}[{i}]", key, p) for i, key in enumerate(keys) for p in qualified_name_problems(key)
    ]


def label_key_causes(holder: Any, path: str) -> list[Cause]:
    """validation.go `validateMatchLabelKeysAndMismatchLabelKeys` for a pod affinity term or a
    topology spread constraint (which has no mismatchLabelKeys), at `path` (the term's own path).

    Runs after the create-time merge, as upstream's does: a `matchLabelKeys` key is refused as
    "exists in both matchLabelKeys and labelSelector" when a matchExpression with that key comes
    after the same key in matchLabels or an earlier matchExpression, reported at `path[i]`
    (upstream's path, without `.matchLabelKeys`); a key in both lists is refused at
    `path.matchLabelKeys[i]`.
    """
    holder = holder if isinstance(holder, dict) else {}
    match, mismatch = _keys(holder.get("matchLabelKeys")), _keys(holder.get("mismatchLabelKeys"))
    selector = holder.get("labelSelector")
    causes = _key_list_causes(f"{path}.matchLabelKeys", match, selector)
    causes += _key_list_causes(f"{path}.mismatchLabelKeys", mismatch, selector)
    if isinstance(selector, dict):
        index = {key: i for i, key in enumerate(match)}
        seen = set(_dict(selector.get("matchLabels")))
        for expr in selector.get("matchExpressions") or ():
            key = expr.get("key") if isinstance(expr, dict) else None
            if isinstance(key, str) and key in index and key in seen:
                causes.append(
                    invalid(f"{path}[{index[key]}]", key, "exists in both matchLabelKeys and labelSelector")
                )
            if isinstance(key, str):
                seen.add(key)
    refused = set(mismatch)
    message = "exists in both matchLabelKeys and mismatchLabelKeys"
    return causes + [
        invalid(f"{path}.matchLabelKeys[{i}]", k, message) for i, k in enumerate(match) if k in refused
    ]


def spread_label_key_causes(spec: dict[str, Any]) -> list[Cause]:
    """Each `spec.topologySpreadConstraints[i]`'s matchLabelKeys (with the selector-merge gate on)."""
    constraints = spec.get("topologySpreadConstraints")
    causes: list[Cause] = []
    for i, constraint in enumerate(constraints if isinstance(constraints, list) else []):
        if isinstance(constraint, dict):
            causes += label_key_causes(
                {
                    "matchLabelKeys": constraint.get("matchLabelKeys"),
                    "labelSelector": constraint.get("labelSelector"),
                },
                f"spec.topologySpreadConstraints[{i}]",
            )
    return causes
