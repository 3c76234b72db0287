"""Validation of TrainingPolicy objects: every problem, as Kubernetes-style FieldErrors.

Used by the validating webhook (an invalid policy is refused), by `kubetrain validate --policy`
and by the webhook's policy cache (a policy that is invalid anyway — e.g. created before the
webhook ran — is ignored and reported in its status).

Rules: apiVersion/kind; metadata.name a DNS-1123 subdomain; `namespaceSelector` a valid
metav1.LabelSelector (label keys and values, operators In/NotIn with values, Exists/DoesNotExist
without); `kinds` known job kinds, no duplicates; defaults and limits not negative
(`activeDeadlineSeconds` ≥ 1), quantities valid; `allowedImages` usable globs; label keys valid;
a policy's default deadline within its own `maxActiveDeadlineSeconds`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from kubetrain.api.dnsnames import DNS1123_LABEL, qualified_name_problem
from kubetrain.api.errors import (
    QUOTE,
    FieldError,
    duplicate,
    forbidden,
    format_errors,
    invalid,
    not_supported,
    required,
)
from kubetrain.api.policy import (
    API_VERSION,
    KIND,
    SELECTOR_OPERATORS,
    NamespaceSelector,
    PolicyDefaults,
    PolicyLimits,
    TrainingPolicy,
)
from kubetrain.api.quantity import QuantityError, parse_quantity
from kubetrain.api.trainer.constants import TRAINJOB
from kubetrain.frameworks.registry import known_kinds
from kubetrain.policy.images import glob_problem

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_TYPE_TAGS = {"int", "float", "str", "bool", "dict[str,str]", "list[str]"}


class InvalidPolicyError(Exception):
    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__(format_errors(errors))
        self.errors = errors


def _dns1123_subdomain(value: str) -> bool:
    return 0 < len(value) <= 253 and all(DNS1123_LABEL.match(p) for p in value.split("."))


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a valid label key (a qualified name), or None."""
    return qualified_name_problem(key)


def label_value_problem(value: str) -> str | None:
    if value == "":
        return None
    if len(value) > 63 or not _NAME_PART.match(value):
        return (
            "must be at most 63 characters, alphanumeric, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def _pydantic_errors(exc: ValidationError) -> list[FieldError]:
    out: list[FieldError] = []
    seen: set[str] = set()
    for err in exc.errors():
        path = ""
        for part in err["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            elif part in _TYPE_TAGS or "[" in str(part):
                continue
            else:
                path = f"{path}.{part}" if path else str(part)
        if path in seen:
            continue
        seen.add(path)
        kind = err["type"]
        if kind == "missing":
            out.append(required(path, "required field is missing"))
        elif kind == "extra_forbidden":
            out.append(invalid(path, "unknown field"))
        elif kind == "literal_error":
            expected = str(err.get("ctx", {}).get("expected", ""))
            choices = [c.strip().strip("'") for c in expected.replace(" or ", ",").split(",") if c.strip()]
            out.append(not_supported(path, err.get("input"), choices))
        else:
            out.append(invalid(path, f"{QUOTE.encode(err.get('input'))}: {err['msg']}"))
    return out


def _selector_errors(selector: NamespaceSelector, base: str) -> list[FieldError]:
    out: list[FieldError] = []
    for key, value in (selector.match_labels or {}).items():
        path = f"{base}.matchLabels[{key}]"
        if (problem := label_key_problem(key)) is not None:
            out.append(invalid(path, f"key {QUOTE.encode(key)}: {problem}"))
        if (problem := label_value_problem(value)) is not None:
            out.append(invalid(path, f"value {QUOTE.encode(value)}: {problem}"))
    for index, req in enumerate(selector.match_expressions or []):
        path = f"{base}.matchExpressions[{index}]"
        if (problem := label_key_problem(req.key)) is not None:
            out.append(invalid(f"{path}.key", f"{QUOTE.encode(req.key)}: {problem}"))
        if req.operator not in SELECTOR_OPERATORS:
            out.append(not_supported(f"{path}.operator", req.operator, SELECTOR_OPERATORS))
            continue
        values = req.values or []
        if req.operator in ("In", "NotIn") and not values:
            out.append(required(f"{path}.values", f"must be non-empty when operator is {req.operator}"))
        if req.operator in ("Exists", "DoesNotExist") and values:
            out.append(forbidden(f"{path}.values", f"must be empty when operator is {req.operator}"))
        for vi, value in enumerate(values):
            if (problem := label_value_problem(value)) is not None:
                out.append(invalid(f"{path}.values[{vi}]", f"{QUOTE.encode(value)}: {problem}"))
    return out


def _min(path: str, value: int | None, minimum: int, out: list[FieldError]) -> None:
    if value is not None and value < minimum:
        out.append(invalid(path, f"{value}: must be greater than or equal to {minimum}"))


def _defaults_errors(defaults: PolicyDefaults, base: str) -> list[FieldError]:
    out: list[FieldError] = []
    rp = defaults.run_policy
    if rp is not None:
        _min(f"{base}.runPolicy.ttlSecondsAfterFinished", rp.ttl_seconds_after_finished, 0, out)
        _min(f"{base}.runPolicy.activeDeadlineSeconds", rp.active_deadline_seconds, 1, out)
        _min(f"{base}.runPolicy.backoffLimit", rp.backoff_limit, 0, out)
        sp = rp.scheduling_policy
        if sp is not None:
            for name, value in (("queue", sp.queue), ("priorityClass", sp.priority_class)):
                if value is not None and not value:
                    out.append(invalid(f"{base}.runPolicy.schedulingPolicy.{name}", "must not be empty"))
    for key, value in (defaults.labels or {}).items():
        path = f"{base}.labels[{key}]"
        if (problem := label_key_problem(key)) is not None:
            out.append(invalid(path, f"key {QUOTE.encode(key)}: {problem}"))
        if (problem := label_value_problem(value)) is not None:
            out.append(invalid(path, f"value {QUOTE.encode(value)}: {problem}"))
    return out


def _resources(base: str, amounts: Mapping[str, Any] | None, out: list[FieldError]) -> None:
    """A map of resource name → non-negative quantity (`maxTotalResources`)."""
    for name, raw in (amounts or {}).items():
        path = f"{base}[{name}]"
        if (problem := label_key_problem(name)) is not None:
            out.append(invalid(path, f"resource name {QUOTE.encode(name)}: {problem}"))
        try:
            if parse_quantity(raw) < 0:
                out.append(invalid(path, f"{QUOTE.encode(raw)}: must be greater than or equal to 0"))
        except QuantityError as exc:
            out.append(invalid(path, str(exc)))


def _limits_errors(limits: PolicyLimits, base: str) -> list[FieldError]:
    out: list[FieldError] = []
    _min(f"{base}.maxReplicasPerJob", limits.max_replicas_per_job, 0, out)
    _min(f"{base}.maxActiveDeadlineSeconds", limits.max_active_deadline_seconds, 1, out)
    _resources(f"{base}.maxTotalResources", limits.max_total_resources, out)
    quota = limits.tenant_quota
    if quota is not None:
        _min(f"{base}.tenantQuota.maxJobs", quota.max_jobs, 0, out)
        _min(f"{base}.tenantQuota.maxReplicas", quota.max_replicas, 0, out)
        _resources(f"{base}.tenantQuota.maxTotalResources", quota.max_total_resources, out)
    for index, glob in enumerate(limits.allowed_images or []):
        if (problem := glob_problem(glob)) is not None:
            out.append(invalid(f"{base}.allowedImages[{index}]", f"{QUOTE.encode(glob)}: {problem}"))
    seen: set[str] = set()
    for index, key in enumerate(limits.required_labels or []):
        path = f"{base}.requiredLabels[{index}]"
        if (problem := label_key_problem(key)) is not None:
            out.append(invalid(path, f"{QUOTE.encode(key)}: {problem}"))
        if key in seen:
            out.append(duplicate(path, f"{QUOTE.encode(key)} is listed twice"))
        seen.add(key)
    return out


def _semantic_errors(policy: TrainingPolicy) -> list[FieldError]:
    out: list[FieldError] = []
    if policy.api_version != API_VERSION:
        out.append(not_supported("apiVersion", policy.api_version, [API_VERSION]))
    if policy.kind != KIND:
        out.append(not_supported("kind", policy.kind, [KIND]))
    name = policy.metadata.get("name")
    if not isinstance(name, str) or not name:
        out.append(required("metadata.name", "a TrainingPolicy needs a name"))
    elif not _dns1123_subdomain(name):
        out.append(
            invalid("metadata.name", f"{QUOTE.encode(name)}: must be a DNS-1123 subdomain (e.g. gpu-quota)")
        )
    spec = policy.spec
    if spec.namespace_selector is not None:
        out += _selector_errors(spec.namespace_selector, "spec.namespaceSelector")
    if spec.job_selector is not None:
        out += _selector_errors(spec.job_selector, "spec.jobSelector")
    kinds = (*known_kinds(), TRAINJOB)  # Kubeflow Trainer v2's TrainJob (kubetrain.policy.trainjob)
    seen: set[str] = set()
    for index, kind in enumerate(spec.kinds or []):
        if kind not in kinds:
            out.append(not_supported(f"spec.kinds[{index}]", kind, kinds))
        elif kind in seen:
            out.append(duplicate(f"spec.kinds[{index}]", f"{QUOTE.encode(kind)} is listed twice"))
        seen.add(kind)
    if spec.defaults is not None:
        out += _defaults_errors(spec.defaults, "spec.defaults")
    if spec.limits is not None:
        out += _limits_errors(spec.limits, "spec.limits")
        maximum = spec.limits.max_active_deadline_seconds
        rp = spec.defaults.run_policy if spec.defaults else None
        default = rp.active_deadline_seconds if rp else None
        if maximum is not None and default is not None and default > maximum:
            out.append(
                invalid(
                    "spec.defaults.runPolicy.activeDeadlineSeconds",
                    f"{default}: exceeds this policy's spec.limits.maxActiveDeadlineSeconds {maximum}",
                )
            )
    return out


def parse_policy(obj: dict[str, Any]) -> TrainingPolicy:
    """The policy model of a valid TrainingPolicy; raises InvalidPolicyError listing every problem."""
    if not isinstance(obj, dict):
        raise InvalidPolicyError([invalid("", "a TrainingPolicy must be an object")])
    try:
        policy = TrainingPolicy.model_validate(obj)
    except ValidationError as exc:
        raise InvalidPolicyError(_pydantic_errors(exc)) from None
    errors = _semantic_errors(policy)
    if errors:
        raise InvalidPolicyError(errors)
    return policy


def validate_policy(obj: dict[str, Any]) -> list[FieldError]:
    """Every problem of a TrainingPolicy object (empty when it is valid)."""
    try:
        parse_policy(obj)
    except InvalidPolicyError as exc:
        return exc.errors
    return []
