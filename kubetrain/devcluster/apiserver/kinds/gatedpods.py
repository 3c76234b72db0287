"""What an update may change in a pod that had scheduling gates before it (KEP-3838, mutable
scheduling directives of gated pods): `ValidatePodUpdate`'s `podIsGated` branch in
k8s.io/kubernetes pkg/apis/core/validation/validation.go.

- `spec.nodeSelector` may gain keys, never lose or change one (`validateNodeSelectorMutation`):
  how Kueue's topology ungater lifts its gate and pins the pod to its domain in one patch;
- `spec.affinity.nodeAffinity` may only narrow: with required node selector terms stored, their
  number stays and each term only gains match expressions / match fields after the ones it has
  (`validateNodeAffinityMutation`, `validateNodeSelectorTermHasOnlyAdditions`); without them,
  and for the preferred terms, anything goes.

`gated_update_causes` returns those errors and takes both fields out of the two specs (the
munging upstream does), so the rest of the update is checked as for any pod. Bad values are
shown as `field.Error.ErrorBody` prints them: a map[string]string with Go's %#v, Go structs
abbreviated (fielderrors.Go)."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import fielderrors

Obj = dict[str, Any]
TERMS = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


def _mapping(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def gated_update_causes(new_spec: Obj, old_spec: Obj) -> list[Cause]:
    """The errors of the gated pod's nodeSelector and nodeAffinity changes; both specs are left
    without `nodeSelector` and with the old `nodeAffinity` (upstream's four-way munging)."""
    causes = node_selector_causes(new_spec.pop("nodeSelector", None), old_spec.pop("nodeSelector", None))
    old_node_affinity = _mapping(old_spec.get("affinity")).get("nodeAffinity")
    new_affinity = new_spec.get("affinity")
    new_node_affinity = _mapping(new_affinity).get("nodeAffinity")
    if new_node_affinity == old_node_affinity:
        return causes
    causes += node_affinity_causes(new_node_affinity, old_node_affinity)
    others = {k: v for k, v in _mapping(new_affinity).items() if k != "nodeAffinity" and v is not None}
    if new_affinity is None:
        if old_node_affinity is not None:
            new_spec["affinity"] = {"nodeAffinity": old_node_affinity}
    elif old_spec.get("affinity") is None and not others:
        new_spec.pop("affinity", None)
    elif old_node_affinity is None:
        new_spec["affinity"] = others
    else:
        new_spec["affinity"] = {**others, "nodeAffinity": old_node_affinity}
    return causes


def node_selector_causes(new: object, old: object) -> list[Cause]:
    """validateNodeSelectorMutation: every old key keeps its value."""
    new_selector, old_selector = _mapping(new), _mapping(old)
    if all(k in new_selector and new_selector[k] == v for k, v in old_selector.items()):
        return []
    shown = ", ".join(
        f"{fielderrors.go_quote(k)}:{fielderrors.go_quote(str(v))}" for k, v in sorted(new_selector.items())
    )
    return [
        fielderrors.invalid(
            "spec.nodeSelector",
            fielderrors.Go(f"map[string]string{{{shown}}}"),
            "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
        )
    ]


def node_affinity_causes(new: object, old: object) -> list[Cause]:
    """validateNodeAffinityMutation over the required node selector terms."""
    old_required = _mapping(old).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(old_required, dict):
        return []
    old_terms = list(old_required.get("nodeSelectorTerms") or [])
    new_required = _mapping(_mapping(new).get("requiredDuringSchedulingIgnoredDuringExecution"))
    new_terms = list(new_required.get("nodeSelectorTerms") or [])
    if old_terms and len(old_terms) != len(new_terms):
        return [
            fielderrors.invalid(
                TERMS,
                fielderrors.Go("[]core.NodeSelectorTerm{...}"),
                "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
            )
        ]
    return [
        fielderrors.invalid(
            f"{TERMS}[{i}]",
            fielderrors.Go("core.NodeSelectorTerm{...}"),
            "only additions are allowed (no mutations or deletions)",
        )
        for i, old_term in enumerate(old_terms)  # as many new terms (above), or no old one
        if not _only_additions(_mapping(new_terms[i]), _mapping(old_term))
    ]


def _only_additions(new_term: Obj, old_term: Obj) -> bool:
    """validateNodeSelectorTermHasOnlyAdditions: the old term's matchExpressions and matchFields
    are the first ones of the new term's, unchanged."""
    for key in ("matchExpressions", "matchFields"):
        old_items = list(old_term.get(key) or [])
        new_items = list(new_term.get(key) or [])
        if len(old_items) > len(new_items) or new_items[: len(old_items)] != old_items:
            return False
    return True
