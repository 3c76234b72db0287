"""Policies applied offline (`kubetrain validate --policy FILE`), e.g. in a platform team's CI.

The same steps as the webhooks: the built-in defaults (done by the caller), then the defaults
of the matching policies (fields the user left unset), then every limit. Which policies match:
with `--namespace-labels` given, each policy's `namespaceSelector` is evaluated against those
labels (plus `kubernetes.io/metadata.name: <the job's namespace>`); without it, the namespace
is unknown and every policy is applied whatever its selector says (`kinds` still count).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.policy import TrainingPolicy
from kubetrain.policy.cache import NAME_LABEL
from kubetrain.policy.defaults import apply_policy_defaults
from kubetrain.policy.limits import check_policy_limits
from kubetrain.policy.matching import matching_policies
from kubetrain.policy.validate_policy import label_key_problem, label_value_problem


@dataclass(frozen=True)
class OfflineVerdict:
    obj: dict[str, Any]  # the job with the policy defaults applied
    applied: list[str] = field(default_factory=list)
    denials: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_namespace_labels(text: str) -> dict[str, str]:
    """`team=vision,env=prod` -> {"team": "vision", "env": "prod"}; ValueError says what is wrong."""
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{QUOTE.encode(item)} is not KEY=VALUE")
        problem = label_key_problem(key) or label_value_problem(value)
        if problem is not None:
            raise ValueError(f"{QUOTE.encode(item)}: {problem}")
        labels[key] = value
    return labels


def applicable_policies(
    job: dict[str, Any], policies: Sequence[TrainingPolicy], namespace_labels: dict[str, str] | None
) -> list[TrainingPolicy]:
    kind = str(job.get("kind", ""))
    if namespace_labels is None:
        return sorted((p for p in policies if not p.spec.kinds or kind in p.spec.kinds), key=lambda p: p.name)
    metadata = job.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    labels = dict(namespace_labels)
    labels.setdefault(NAME_LABEL, namespace if isinstance(namespace, str) and namespace else "default")
    return matching_policies(policies, kind, labels)


def evaluate_offline(
    user_job: dict[str, Any],
    defaulted_job: dict[str, Any],
    policies: Sequence[TrainingPolicy],
    *,
    namespace_labels: dict[str, str] | None = None,
    gang_scheduling: bool | None = None,
) -> OfflineVerdict:
    """Policy defaults then limits for one job (`defaulted_job`: after the built-in defaults)."""
    selected = applicable_policies(user_job, policies, namespace_labels)
    defaulted = apply_policy_defaults(defaulted_job, selected, user_job=user_job)
    verdict = check_policy_limits(defaulted.obj, selected, gang_scheduling=gang_scheduling)
    return OfflineVerdict(
        obj=defaulted.obj, applied=defaulted.applied, denials=verdict.denials, warnings=verdict.warnings
    )
