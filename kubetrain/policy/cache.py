"""PolicyIndex: the webhook's in-memory view of TrainingPolicies and namespace labels.

Pure and synchronous: informer handlers feed it (`on_policy_add/update/delete`,
`on_namespace_add/update/delete`, plain dicts) and an admission review asks
`for_job(kind, namespace)` without any API call. Invalid policies are kept aside with their
errors (`invalid_policies()`) and never applied. Answers are memoised per (kind, namespace)
and the memo is dropped on every change, so a relabelled namespace or an edited policy
takes effect on the next review.

A namespace the index has not seen yet (its watch event may trail a just-created namespace)
is treated as carrying only the label kube-apiserver sets on every namespace,
`kubernetes.io/metadata.name: <name>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import FieldError
from kubetrain.api.policy import TrainingPolicy
from kubetrain.policy.matching import matching_policies
from kubetrain.policy.tenantquota import TenantJobs
from kubetrain.policy.validate_policy import InvalidPolicyError, parse_policy

NAME_LABEL = "kubernetes.io/metadata.name"


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""


class PolicyIndex:
    def __init__(self) -> None:
        self._policies: dict[str, TrainingPolicy] = {}
        self._invalid: dict[str, list[FieldError]] = {}
        self._namespaces: dict[str, dict[str, str]] = {}
        self._memo: dict[tuple[str, str], list[TrainingPolicy]] = {}
        # The tenants' unfinished jobs, for tenant quotas (fed by the webhook's job watch).
        self.tenant_jobs = TenantJobs()

    # --- TrainingPolicy events --------------------------------------------------------------
    def on_policy_add(self, obj: dict[str, Any]) -> None:
        name = _name(obj)
        if not name:
            return
        self._memo.clear()
        self._policies.pop(name, None)
        self._invalid.pop(name, None)
        try:
            self._policies[name] = parse_policy(obj)
        except InvalidPolicyError as exc:
            self._invalid[name] = exc.errors

    def on_policy_update(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        if old is not None and _name(old) != _name(new):
            self.on_policy_delete(old)
        self.on_policy_add(new)

    def on_policy_delete(self, obj: dict[str, Any]) -> None:
        name = _name(obj)
        self._memo.clear()
        self._policies.pop(name, None)
        self._invalid.pop(name, None)

    # --- Namespace events -------------------------------------------------------------------
    def on_namespace_add(self, obj: dict[str, Any]) -> None:
        name = _name(obj)
        if not name:
            return
        metadata = obj.get("metadata")
        raw = metadata.get("labels") if isinstance(metadata, Mapping) else None
        labels = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}
        labels.setdefault(NAME_LABEL, name)
        if self._namespaces.get(name) != labels:
            self._memo.clear()
            self._namespaces[name] = labels

    def on_namespace_update(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        self.on_namespace_add(new)

    def on_namespace_delete(self, obj: dict[str, Any]) -> None:
        if self._namespaces.pop(_name(obj), None) is not None:
            self._memo.clear()

    # --- queries ----------------------------------------------------------------------------
    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return dict(self._namespaces.get(namespace) or {NAME_LABEL: namespace})

    def for_job(self, kind: str, namespace: str) -> list[TrainingPolicy]:
        """The valid policies that apply to a job of `kind` in `namespace`, in name order."""
        key = (kind, namespace)
        cached = self._memo.get(key)
        if cached is None:
            labels = self._namespaces.get(namespace) or {NAME_LABEL: namespace}
            cached = matching_policies(self._policies.values(), kind, labels)
            self._memo[key] = cached
        return list(cached)

    def policies(self) -> list[TrainingPolicy]:
        return sorted(self._policies.values(), key=lambda p: p.name)

    def invalid_policies(self) -> dict[str, list[FieldError]]:
        return {name: list(errors) for name, errors in sorted(self._invalid.items())}

    def clear(self) -> None:
        """Forget everything (e.g. before an informer relist replays the current state)."""
        self._policies.clear()
        self._invalid.clear()
        self._namespaces.clear()
        self._memo.clear()
        self.tenant_jobs.clear()
