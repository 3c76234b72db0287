"""A pod spec's nodeSelector and inter-pod affinity terms, as kube-apiserver validates them
(k8s.io/kubernetes pkg/apis/core/validation, validation.go), with upstream's causes:

- `ValidatePodSpec`: `spec.nodeSelector` with apimachinery's `ValidateLabels` — each key a
  qualified name, each value a label value, both reported at `spec.nodeSelector`.
- `validateAffinity` → `validatePodAffinity` / `validatePodAntiAffinity`: each required term
  (`validatePodAffinityTerms`) and each preferred one (`validateWeightedPodAffinityTerms`: weight
  1-100, the term under `podAffinityTerm`) by `validatePodAffinityTerm`: its labelSelector and
  namespaceSelector (`ValidatePodAffinityTermSelector`, apimachinery's `ValidateLabelSelector`:
  matchLabels as labels; each matchExpression's operator In/NotIn with values, Exists/
  DoesNotExist without, its key a qualified name and its values label values), its namespaces
  DNS-1123 labels (reported at `.namespace`, upstream's spelling), and its topologyKey: Required
  "can not be empty", and a qualified name (`ValidateLabelName`) — an empty key has both errors.

Not validated here: nodeAffinity's terms (gatedpods.py checks their changes on a gated pod),
matchLabelKeys/mismatchLabelKeys, tolerations.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import dicts, forbidden, invalid, mapping, required
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    dns1123_label_errors,
    label_value_problems,
    qualified_name_problems,
)

TERMS = "requiredDuringSchedulingIgnoredDuringExecution"
WEIGHTED = "preferredDuringSchedulingIgnoredDuringExecution"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def label_causes(labels: Any, path: str) -> list[Cause]:
    """apimachinery metav1validation.ValidateLabels: every error at `path` itself."""
    causes: list[Cause] = []
    for key, value in mapping(labels).items():
        causes += [invalid(path, key, p) for p in qualified_name_problems(key)]
        causes += [invalid(path, _text(value), p) for p in label_value_problems(_text(value))]
    return causes


def selector_causes(selector: Any, path: str) -> list[Cause]:
    """apimachinery metav1validation.ValidateLabelSelector (invalid label values refused)."""
    if not isinstance(selector, dict):
        return []
    causes = label_causes(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in dicts(selector.get("matchExpressions")):
        at = f"{path}.matchExpressions[{i}]"
        operator, values = expr.get("operator"), expr.get("values") or []
        values = values if isinstance(values, list) else []
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(
                    required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(
                    forbidden(
                        f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    )
                )
        else:
            causes.append(invalid(f"{at}.operator", _text(operator), "not a valid selector operator"))
        key = _text(expr.get("key"))
        causes += [invalid(f"{at}.key", key, p) for p in qualified_name_problems(key)]
        for j, value in enumerate(values):
            causes += [
                invalid(f"{at}.values[{j}]", _text(value), p) for p in label_value_problems(_text(value))
            ]
    return causes


def term_causes(term: dict[str, Any], path: str) -> list[Cause]:
    """validatePodAffinityTerm."""
    causes = selector_causes(term.get("labelSelector"), f"{path}.labelSelector")
    causes += selector_causes(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    namespaces = term.get("namespaces")
    for name in namespaces if isinstance(namespaces, list) else []:
        causes += [invalid(f"{path}.namespace", _text(name), p) for p in dns1123_label_errors(_text(name))]
    key = _text(term.get("topologyKey"))
    if not key:
        causes.append(required(f"{path}.topologyKey", "can not be empty"))
    return causes + [invalid(f"{path}.topologyKey", key, p) for p in qualified_name_problems(key)]


def _part_causes(part: Any, path: str) -> list[Cause]:
    """validatePodAffinity / validatePodAntiAffinity (the same checks)."""
    part = mapping(part)
    causes: list[Cause] = []
    for i, term in dicts(part.get(TERMS)):
        causes += term_causes(term, f"{path}.{TERMS}[{i}]")
    for i, weighted in dicts(part.get(WEIGHTED)):
        weight = weighted.get("weight")
        weight = weight if isinstance(weight, int) and not isinstance(weight, bool) else 0  # Go's zero
        if not 1 <= weight <= 100:
            causes.append(invalid(f"{path}.{WEIGHTED}[{i}].weight", weight, "must be in the range 1-100"))
        causes += term_causes(
            mapping(weighted.get("podAffinityTerm")), f"{path}.{WEIGHTED}[{i}].podAffinityTerm"
        )
    return causes


def placement_causes(spec: dict[str, Any]) -> list[Cause]:
    """The pod spec's nodeSelector, then its pod affinity and anti-affinity terms."""
    causes = label_causes(spec.get("nodeSelector"), "spec.nodeSelector")
    affinity = mapping(spec.get("affinity"))
    causes += _part_causes(affinity.get("podAffinity"), "spec.affinity.podAffinity")
    causes += _part_causes(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity")
    return causes
