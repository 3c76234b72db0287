"""Which TrainingPolicies apply to a job: namespace label selectors and kinds.

Label selectors follow metav1.LabelSelector semantics exactly: every `matchLabels` pair and
every `matchExpressions` requirement must hold (AND). `In` needs the key present with one of the
values; `NotIn` holds when the key is absent or its value is not listed; `Exists` /
`DoesNotExist` test the key only. An absent or empty selector selects every namespace (as
`namespaceSelector` of an admission webhook does). Selectors are assumed valid here (see
`validate_policy`); an unknown operator selects nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubetrain.api.policy import NamespaceSelector, TrainingPolicy


def selector_matches(selector: NamespaceSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether a label set satisfies the selector."""
    if selector is None:
        return True
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions or []:
        values = req.values or []
        present = req.key in labels
        if req.operator == "In":
            ok = present and labels[req.key] in values
        elif req.operator == "NotIn":
            ok = not present or labels[req.key] not in values
        elif req.operator == "Exists":
            ok = present
        elif req.operator == "DoesNotExist":
            ok = not present
        else:
            ok = False
        if not ok:
            return False
    return True


def policy_applies(policy: TrainingPolicy, kind: str, namespace_labels: Mapping[str, str]) -> bool:
    """Whether the policy selects a job of `kind` in a namespace carrying `namespace_labels`."""
    kinds = policy.spec.kinds
    if kinds and kind not in kinds:
        return False
    return selector_matches(policy.spec.namespace_selector, namespace_labels)


def matching_policies(
    policies: Iterable[TrainingPolicy], kind: str, namespace_labels: Mapping[str, str]
) -> list[TrainingPolicy]:
    """The policies that apply, sorted by name (the order in which defaults are taken)."""
    selected = [p for p in policies if policy_applies(p, kind, namespace_labels)]
    return sorted(selected, key=lambda p: p.name)


def job_labels_of(job: Mapping[str, object]) -> dict[str, str]:
    meta = job.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def select_by_job_labels(
    policies: Iterable[TrainingPolicy], job: Mapping[str, object]
) -> list[TrainingPolicy]:
    """The policies whose `jobSelector` the job's labels satisfy (absent selector: all)."""
    labels = job_labels_of(job)
    return [p for p in policies if selector_matches(p.spec.job_selector, labels)]
