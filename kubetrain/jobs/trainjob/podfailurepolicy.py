"""A replicated job's Job `podFailurePolicy` (batch/v1), which kubetrain applies in the Job
controller's place: the runtime's admission rules for it (and for the Job's other failure fields
kubetrain applies, batch/v1 `validateJobSpec`: `activeDeadlineSeconds` a non-negative integer;
`backoffLimitPerIndex` one too, and only with completionMode Indexed — unset is JobSet's
default, Indexed; `maxFailedIndexes` a non-negative integer at most the template's `completions`
when set and at most 100000, only with `backoffLimitPerIndex` and completionMode Indexed), and
the rules as the planner reads them.

Admission (`validate`) holds each replicated job's policy to the Job API's validation
(kubernetes pkg/apis/batch/validation: `validatePodFailurePolicy`, `validatePodFailurePolicyRule`
and its `onExitCodes`/`onPodConditions` checks, through `kubetrain.jobs.failurepolicy`'s shared
ones; `validateJobSpec`'s restartPolicy rule; `validatePodReplacementPolicy`): at most 20 rules,
an action of `FailJob`, `Ignore` or `Count`, exactly one of `onExitCodes` (`containerName` a
container or init container of the Job's pod template, `operator` In/NotIn, 1 to 255 ascending
distinct int32 values, no 0 with In) and `onPodConditions` (1 to 20 patterns of a qualified
type and a status True/False/Unknown, True when unset: batch/v1's default), the pod template's
`restartPolicy` `Never` (unset is JobSet's default, OnFailure) and `podReplacementPolicy`, when
set, `Failed`. `FailIndex` only with the Job's `backoffLimitPerIndex` (`validatePodFailurePolicyRule`:
"requires the backoffLimitPerIndex to be set").

The planner (`operator/groupfailure.py`) matches a Failed pod against its Job's rules with the
Job controller's matcher (`operator/restarts.first_match`, restricted to
`failuremodel.JOB_RULE_ACTIONS`, or `INDEX_RULE_ACTIONS` under `backoffLimitPerIndex`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid, not_supported, required
from kubetrain.jobs.failuremodel import INDEX_RULE_ACTIONS
from kubetrain.jobs.failurepolicy import (
    MAX_RULES,
    OPERATORS,
    action_errors,
    requirement_errors,
)

FAIL_INDEX = "FailIndex"
FAIL_INDEX_REFUSED = (
    "requires the backoffLimitPerIndex to be set: set the replicated job's backoffLimitPerIndex, "
    "or use FailJob, Ignore or Count"
)
MAX_FAILED_INDEXES = 100_000  # batch/v1's maxFailedIndexesForIndexedJob
INDEXED = "Indexed"


def rules_of(job_spec: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The rules of a Job spec's `podFailurePolicy` as written (none when absent or malformed)."""
    policy = job_spec.get("podFailurePolicy")
    rules = policy.get("rules") if isinstance(policy, Mapping) else None
    return tuple(r for r in rules if isinstance(r, Mapping)) if isinstance(rules, list) else ()


def validate(jobset_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """Every problem of the replicated jobs' `podFailurePolicy` and `activeDeadlineSeconds`;
    `path`: the JobSet spec's."""
    errors: list[FieldError] = []
    rjobs = jobset_spec.get("replicatedJobs")
    for i, rjob in enumerate(rjobs if isinstance(rjobs, list) else []):
        template = rjob.get("template") if isinstance(rjob, Mapping) else None
        job_spec = template.get("spec") if isinstance(template, Mapping) else None
        if not isinstance(job_spec, Mapping):
            continue
        job_path = f"{path}.replicatedJobs[{i}].template.spec"
        deadline = job_spec.get("activeDeadlineSeconds")
        if deadline is not None and (type(deadline) is not int or deadline < 0):
            errors.append(
                invalid(
                    f"{job_path}.activeDeadlineSeconds", f"{QUOTE.encode(deadline)}: must be an integer ≥ 0"
                )
            )
        errors += _index_errors(job_spec, job_path)
        if job_spec.get("podFailurePolicy") is not None:
            errors += _job_errors(job_spec, job_path)
    return errors


def _non_negative(job_spec: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> bool:
    """Whether `key` is set; a value that is no integer ≥ 0 is an error (`ValidateNonnegativeField`)."""
    value = job_spec.get(key)
    if value is None:
        return False
    if type(value) is not int or value < 0:
        errors.append(
            invalid(f"{path}.{key}", f"{QUOTE.encode(value)}: must be an integer greater than or equal to 0")
        )
    return True


def _index_errors(job_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """`backoffLimitPerIndex` and `maxFailedIndexes` as batch/v1 `validateJobSpec` holds them."""
    errors: list[FieldError] = []
    per_index = _non_negative(job_spec, "backoffLimitPerIndex", path, errors)
    has_max = _non_negative(job_spec, "maxFailedIndexes", path, errors)
    most, completions = job_spec.get("maxFailedIndexes"), job_spec.get("completions")
    if has_max and not per_index:
        errors.append(required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    if type(most) is int and type(completions) is int and most > completions:
        message = f"{most}: must be less than or equal to completions"
        errors.append(invalid(f"{path}.maxFailedIndexes", message))
    if type(most) is int and most > MAX_FAILED_INDEXES:
        errors.append(
            invalid(f"{path}.maxFailedIndexes", f"{most}: must be less than or equal to {MAX_FAILED_INDEXES}")
        )
    mode = job_spec.get("completionMode")
    if mode is not None and mode != INDEXED:  # unset: JobSet's default, Indexed
        for key, present in (("backoffLimitPerIndex", per_index), ("maxFailedIndexes", has_max)):
            if present:
                errors.append(
                    invalid(f"{path}.{key}", f"requires indexed completion mode, not {QUOTE.encode(mode)}")
                )
    return errors


def _job_errors(job_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    policy, base = job_spec["podFailurePolicy"], f"{path}.podFailurePolicy"
    if not isinstance(policy, Mapping):
        return [invalid(base, "must be an object with a list of rules")]
    rules = policy.get("rules")
    if not isinstance(rules, list):
        return [invalid(f"{base}.rules", "must be a list of rules (it may be empty)")]
    errors = _template_errors(job_spec, path)
    if len(rules) > MAX_RULES:
        errors.append(invalid(f"{base}.rules", f"must have at most {MAX_RULES} items, got {len(rules)}"))
    names = _container_names(job_spec)
    per_index = job_spec.get("backoffLimitPerIndex") is not None
    for j, rule in enumerate(rules):
        rule_path = f"{base}.rules[{j}]"
        if not isinstance(rule, Mapping):
            errors.append(
                invalid(rule_path, "must be an object with an action and onExitCodes or onPodConditions")
            )
            continue
        shape = _shape_errors(rule, rule_path)
        if not per_index and rule.get("action") == FAIL_INDEX:  # batch/v1: a supported value, but
            errors.append(invalid(f"{rule_path}.action", FAIL_INDEX_REFUSED))  # only with a per-index limit
        errors += action_errors(rule, rule_path, INDEX_RULE_ACTIONS)
        errors += shape or requirement_errors(rule, rule_path, names, "in the pod template")
    return errors


def _template_errors(job_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """The Job spec around the policy: restartPolicy Never (batch/v1 `validateJobSpec`; unset is
    OnFailure, JobSet's default) and podReplacementPolicy Failed when set (`validatePodReplacementPolicy`)."""
    errors: list[FieldError] = []
    restart = _pod_spec(job_spec).get("restartPolicy")
    if restart != "Never":
        shown = restart if restart else "OnFailure (unset: JobSet's default)"
        errors.append(
            invalid(
                f"{path}.template.spec.restartPolicy",
                f'{shown!s}: only "Never" is supported when podFailurePolicy is specified',
            )
        )
    replacement = job_spec.get("podReplacementPolicy")
    if replacement is not None and replacement != "Failed":
        errors.append(not_supported(f"{path}.podReplacementPolicy", replacement, ("Failed",)))
    return errors


def _shape_errors(rule: Mapping[str, Any], path: str) -> list[FieldError]:
    """What the Job API's types hold that the runtime's schema (an open Job spec) does not: a
    rule's fields of the wrong type, an unknown operator, an exit code that is no integer."""
    errors: list[FieldError] = []
    action = rule.get("action")
    if action is not None and not isinstance(action, str):
        errors.append(invalid(f"{path}.action", f"must be a string, one of {', '.join(INDEX_RULE_ACTIONS)}"))
    on_exit, conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
    if on_exit is not None and not isinstance(on_exit, Mapping):
        errors.append(invalid(f"{path}.onExitCodes", "must be an object with operator and values"))
    if isinstance(on_exit, Mapping):
        operator = on_exit.get("operator")
        if operator is not None and operator not in OPERATORS:
            errors.append(not_supported(f"{path}.onExitCodes.operator", operator, OPERATORS))
        name = on_exit.get("containerName")
        if name is not None and not isinstance(name, str):
            errors.append(invalid(f"{path}.onExitCodes.containerName", "must be a container name (a string)"))
        values = on_exit.get("values")
        if values is not None and not isinstance(values, list):
            errors.append(invalid(f"{path}.onExitCodes.values", "must be a list of exit codes"))
        for k, value in enumerate(values if isinstance(values, list) else []):
            if not isinstance(value, int) or isinstance(value, bool) or not -(2**31) <= value < 2**31:
                errors.append(
                    invalid(
                        f"{path}.onExitCodes.values[{k}]",
                        f"{QUOTE.encode(value)} is not an exit code (int32)",
                    )
                )
    if conditions is not None and not isinstance(conditions, list):
        errors.append(invalid(f"{path}.onPodConditions", "must be a list of {type, status} patterns"))
    for k, pattern in enumerate(conditions if isinstance(conditions, list) else []):
        if not isinstance(pattern, Mapping):
            errors.append(invalid(f"{path}.onPodConditions[{k}]", "must be an object with type and status"))
    return errors


def _pod_spec(job_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    template = job_spec.get("template")
    pod_spec = template.get("spec") if isinstance(template, Mapping) else None
    return pod_spec if isinstance(pod_spec, Mapping) else {}


def _container_names(job_spec: Mapping[str, Any]) -> set[str]:
    pod_spec = _pod_spec(job_spec)
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        containers = pod_spec.get(key)
        for container in containers if isinstance(containers, list) else []:
            if isinstance(container, Mapping) and isinstance(container.get("name"), str):
                names.add(container["name"])
    return names
