"""`spec.runPolicy.podFailurePolicy` (docs/behaviour.md §6): its default and its validation, with
batch/v1 Job's podFailurePolicy rules (field names, limits and messages) plus kubetrain's action
`RestartJob` and `replicaTypes`. The operator applies the rules in `operator/restarts.py`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.api.common import POD_FAILURE_POLICY_ACTIONS
from kubetrain.api.errors import QUOTE, FieldError, duplicate, invalid, not_supported, required
from kubetrain.jobs.replicadraft import ReplicaDraft

MAX_RULES = 20  # batch/v1: rules, at most 20
MAX_POD_CONDITIONS = 20  # batch/v1: onPodConditions, at most 20
MAX_EXIT_CODE_VALUES = 255  # batch/v1: onExitCodes.values, at most 255
OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("True", "False", "Unknown")
BASE = "spec.runPolicy.podFailurePolicy"
# A qualified name, as a pod condition type must be (`DisruptionTarget`, `example.com/Ready`).
QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def read_pod_failure_policy(spec: Any) -> Any:
    """A job spec's `runPolicy.podFailurePolicy` as written (None when absent, or when the run
    policy is not an object): read once, by the parse stage (`JobDraft.pod_failure_policy`)."""
    run_policy = spec.get("runPolicy") if isinstance(spec, dict) else None
    return run_policy.get("podFailurePolicy") if isinstance(run_policy, dict) else None


def default_pod_failure_policy(policy: Any) -> Any:
    """`policy` with `onPodConditions[*].status` defaulted to True, as in batch/v1: a new value
    when it has rules to default, else `policy` itself (never mutated)."""
    rules = policy.get("rules") if isinstance(policy, dict) else None
    if not isinstance(policy, dict) or not isinstance(rules, list):
        return policy
    new_rules: list[Any] = []
    for rule in rules:
        patterns = rule.get("onPodConditions") if isinstance(rule, dict) else None
        if isinstance(patterns, list):
            rule = {
                **rule,
                "onPodConditions": [
                    {**p, "status": "True"} if isinstance(p, dict) and p.get("status") is None else p
                    for p in patterns
                ],
            }
        new_rules.append(rule)
    return {**policy, "rules": new_rules}


def pod_failure_policy_errors(policy: Any, replicas: tuple[ReplicaDraft, ...] | None) -> list[FieldError]:
    """Every problem of `podFailurePolicy` (its types are checked by the model) as the draft
    holds it (`JobDraft.pod_failure_policy`: defaulted, when defaulting ran); `replicas`: the
    job's replica map, as read."""
    if not isinstance(policy, dict):
        return []
    rules = policy.get("rules")
    if not isinstance(rules, list):
        return []
    errors: list[FieldError] = []
    if len(rules) > MAX_RULES:
        errors.append(invalid(f"{BASE}.rules", f"must have at most {MAX_RULES} items, got {len(rules)}"))
    by_type = {r.key: r for r in replicas or ()}
    types = list(by_type)
    for i, rule in enumerate(rules):
        if isinstance(rule, dict):
            errors.extend(_rule_errors(rule, f"{BASE}.rules[{i}]", types, by_type))
    return errors


def _rule_errors(
    rule: dict[str, Any], path: str, types: list[str], by_type: Mapping[Any, ReplicaDraft]
) -> list[FieldError]:
    errors = action_errors(rule, path, POD_FAILURE_POLICY_ACTIONS)
    selected = _replica_type_errors(rule.get("replicaTypes"), f"{path}.replicaTypes", types, errors)
    names = _container_names(by_type, selected)
    return errors + requirement_errors(rule, path, names, "in the pod template of the rule's replica types")


def action_errors(rule: Mapping[str, Any], path: str, actions: Sequence[str]) -> list[FieldError]:
    """A rule's `action` (one of `actions`) and the choice of one requirement, `onExitCodes` or
    `onPodConditions` (batch/v1's `validatePodFailurePolicyRule`)."""
    errors: list[FieldError] = []
    action = rule.get("action")
    if action is None:
        errors.append(required(f"{path}.action", f"one of {_quoted(actions)}"))
    elif action not in actions:
        errors.append(not_supported(f"{path}.action", action, actions))
    on_exit, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
    if on_exit is not None and on_conditions is not None:
        errors.append(invalid(path, "specifying both onExitCodes and onPodConditions is not supported"))
    elif on_exit is None and on_conditions is None:
        errors.append(required(path, "specifying one of onExitCodes and onPodConditions is required"))
    return errors


def requirement_errors(rule: Mapping[str, Any], path: str, names: set[str], where: str) -> list[FieldError]:
    """A rule's `onExitCodes` (its `containerName` one of `names`, the containers and init
    containers `where` the rule applies) or `onPodConditions`, as batch/v1 validates them."""
    errors: list[FieldError] = []
    on_exit, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
    if isinstance(on_exit, dict):
        errors.extend(_exit_code_errors(on_exit, f"{path}.onExitCodes", names, where))
    if isinstance(on_conditions, list):
        errors.extend(_condition_errors(on_conditions, f"{path}.onPodConditions"))
    return errors


def _replica_type_errors(value: Any, path: str, types: list[str], errors: list[FieldError]) -> list[str]:
    """The replica types a rule applies to (all when unset); bad entries become errors."""
    if not isinstance(value, list) or not value:
        return types
    seen: set[str] = set()
    for j, rtype in enumerate(value):
        if rtype in seen:
            errors.append(duplicate(f"{path}[{j}]", f"{QUOTE.encode(rtype)} is listed twice"))
        elif types and rtype not in types:
            errors.append(not_supported(f"{path}[{j}]", rtype, types))
        seen.add(rtype)
    return [t for t in value if t in types]


def _container_names(by_type: Mapping[Any, ReplicaDraft], types: list[str]) -> set[str]:
    names: set[str] = set()
    for rtype in types:
        r = by_type.get(rtype)
        spec = r.template.get("spec") if r is not None and isinstance(r.template, dict) else None
        if not isinstance(spec, dict):
            continue
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or []:
                if isinstance(container, dict) and isinstance(container.get("name"), str):
                    names.add(container["name"])
    return names


def _exit_code_errors(on_exit: dict[str, Any], path: str, names: set[str], where: str) -> list[FieldError]:
    errors: list[FieldError] = []
    name = on_exit.get("containerName")
    if isinstance(name, str) and names and name not in names:
        errors.append(
            invalid(
                f"{path}.containerName",
                f"{QUOTE.encode(name)} must be one of the container or initContainer names {where}: "
                f"{_quoted(sorted(names))}",
            )
        )
    operator = on_exit.get("operator")
    if operator is None:
        errors.append(required(f"{path}.operator", f"one of {_quoted(OPERATORS)}"))
    values = on_exit.get("values")
    if not isinstance(values, list):
        errors.append(required(f"{path}.values", "at least one exit code"))
        return errors
    if not values:
        errors.append(required(f"{path}.values", "at least one exit code"))
    if len(values) > MAX_EXIT_CODE_VALUES:
        errors.append(
            invalid(f"{path}.values", f"must have at most {MAX_EXIT_CODE_VALUES} items, got {len(values)}")
        )
    previous: int | None = None
    for j, value in enumerate(values):
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if operator == "In" and value == 0:
            errors.append(invalid(f"{path}.values[{j}]", "must not be 0 for the In operator"))
        if previous is not None and value == previous:
            errors.append(duplicate(f"{path}.values[{j}]", f"{value} is listed twice"))
        elif previous is not None and value < previous:
            errors.append(invalid(f"{path}.values[{j}]", f"must be ordered ({value} comes after {previous})"))
        previous = value
    return errors


def _condition_errors(patterns: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not patterns:
        errors.append(required(path, "at least one pod condition pattern, e.g. {type: DisruptionTarget}"))
    if len(patterns) > MAX_POD_CONDITIONS:
        errors.append(invalid(path, f"must have at most {MAX_POD_CONDITIONS} items, got {len(patterns)}"))
    for j, pattern in enumerate(patterns):
        if not isinstance(pattern, dict):
            continue
        ctype = pattern.get("type")
        if not ctype:
            errors.append(required(f"{path}[{j}].type", "a pod condition type, e.g. DisruptionTarget"))
        elif isinstance(ctype, str) and not QUALIFIED_NAME.match(ctype):
            errors.append(
                invalid(
                    f"{path}[{j}].type",
                    f"{QUOTE.encode(ctype)} is not a valid pod condition type (a qualified name)",
                )
            )
        status = pattern.get("status")
        if status is not None and status not in CONDITION_STATUSES:
            errors.append(not_supported(f"{path}[{j}].status", status, CONDITION_STATUSES))
    return errors


def _quoted(values: Any) -> str:
    return ", ".join(f'"{v}"' for v in values)
