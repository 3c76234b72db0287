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

- `validateNodeAffinity`: required terms (`ValidateNodeSelector`: at least one term, "must have
  at least one node selector term") and preferred ones (weight 1-100, the term under
  `preference`). Each matchExpression (`ValidateNodeSelectorRequirement`): operator In/NotIn
  with values, Exists/DoesNotExist without, Gt/Lt with exactly one, else "not a valid selector
  operator"; the key a qualified name; in a required term its values label values (a preferred
  term's are not checked: upstream allows them). Each matchField
  (`ValidateNodeFieldSelectorRequirement`): operator In/NotIn with exactly one value, key
  `metadata.name`, each value a node name (DNS-1123 subdomain).

- `validateMatchLabelKeysAndMismatchLabelKeys` for each pod affinity term and each topology
  spread constraint (the only part of a constraint validated): labelkeys.py.

Changes of a gated pod's node affinity: gatedpods.py.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import dicts, forbidden, invalid, mapping, required
from kubetrain.devcluster.apiserver.kinds.labelkeys import label_key_causes, spread_label_key_causes
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
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
    causes += [invalid(f"{path}.topologyKey", key, p) for p in qualified_name_problems(key)]
    return causes + label_key_causes(term, path)


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


def _node_requirement_causes(req: dict[str, Any], path: str, *, check_values: bool) -> list[Cause]:
    """`ValidateNodeSelectorRequirement`."""
    operator, values = req.get("operator"), req.get("values")
    values = values if isinstance(values, list) else []
    causes: list[Cause] = []
    if operator in ("In", "NotIn"):
        if not values:
            causes.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            message = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            causes.append(forbidden(f"{path}.values", message))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            message = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            causes.append(required(f"{path}.values", message))
    else:
        causes.append(invalid(f"{path}.operator", _text(operator), "not a valid selector operator"))
    key = _text(req.get("key"))
    causes += [invalid(f"{path}.key", key, p) for p in qualified_name_problems(key)]
    for j, value in enumerate(values if check_values else []):
        causes += [
            invalid(f"{path}.values[{j}]", _text(value), p) for p in label_value_problems(_text(value))
        ]
    return causes


def _node_field_causes(req: dict[str, Any], path: str) -> list[Cause]:
    """`ValidateNodeFieldSelectorRequirement`."""
    raw = req.get("values")
    values = raw if isinstance(raw, list) else []
    causes: list[Cause] = []
    if req.get("operator") in ("In", "NotIn"):
        if len(values) != 1:
            message = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            causes.append(required(f"{path}.values", message))
    else:
        causes.append(
            invalid(f"{path}.operator", _text(req.get("operator")), "not a valid selector operator")
        )
    if req.get("key") != "metadata.name":
        return [*causes, invalid(f"{path}.key", _text(req.get("key")), "not a valid field selector key")]
    for i, value in enumerate(values):
        causes += [
            invalid(f"{path}.values[{i}]", _text(value), m) for m in dns1123_subdomain_errors(_text(value))
        ]
    return causes


def node_term_causes(term: dict[str, Any], path: str, *, check_values: bool) -> list[Cause]:
    """`ValidateNodeSelectorTerm`."""
    causes: list[Cause] = []
    for j, req in dicts(term.get("matchExpressions")):
        causes += _node_requirement_causes(req, f"{path}.matchExpressions[{j}]", check_values=check_values)
    for j, req in dicts(term.get("matchFields")):
        causes += _node_field_causes(req, f"{path}.matchFields[{j}]")
    return causes


def node_affinity_causes(node_affinity: Any, path: str) -> list[Cause]:
    """`validateNodeAffinity` (on create: invalid label values in required terms refused)."""
    if not isinstance(node_affinity, dict):
        return []
    causes: list[Cause] = []
    selector = node_affinity.get(TERMS)
    if isinstance(selector, dict):
        terms_path = f"{path}.{TERMS}.nodeSelectorTerms"
        terms = dicts(selector.get("nodeSelectorTerms"))
        if not terms:
            causes.append(required(terms_path, "must have at least one node selector term"))
        for i, term in terms:
            causes += node_term_causes(term, f"{terms_path}[{i}]", check_values=True)
    for i, weighted in dicts(node_affinity.get(WEIGHTED)):
        weight = weighted.get("weight")
        weight = weight if isinstance(weight, int) and not isinstance(weight, bool) else 0
        if not 1 <= weight <= 100:
            causes.append(invalid(f"{path}.{WEIGHTED}[{i}].weight", weight, "must be in the range 1-100"))
        preference = mapping(weighted.get("preference"))
        causes += node_term_causes(preference, f"{path}.{WEIGHTED}[{i}].preference", check_values=False)
    return causes


def affinity_causes(spec: dict[str, Any]) -> list[Cause]:
    """`validateAffinity`: node affinity, then pod affinity and anti-affinity terms; then the
    topology spread constraints' matchLabelKeys."""
    affinity = mapping(spec.get("affinity"))
    causes = node_affinity_causes(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    causes += _part_causes(affinity.get("podAffinity"), "spec.affinity.podAffinity")
    causes += _part_causes(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity")
    return causes + spread_label_key_causes(spec)
