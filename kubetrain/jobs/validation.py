"""Validation (docs/behaviour.md §3) of a job in wire form, on create and on update.

`validate_job` reports every problem at once: type errors from the model, the common rules
(`names.py`; the replica map and templates, `templates.py`; run policy bounds and the replica
limit, `runpolicychecks.py`; pod failure rules, `failurepolicy.py`; annotations), the
framework's own rules (`Framework.validate_spec`) and, on update, the update rules
(`updates.py`). Each error is a `FieldError` with the Kubernetes field
path, a kind and a message that says what would be valid. Warnings are returned separately
(they become AdmissionReview `warnings`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError, required
from kubetrain.api.groups import JOB_GROUPS
from kubetrain.api.servicemode import service_mode_errors
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.annotations import JobAnnotations
from kubetrain.jobs.failurepolicy import pod_failure_policy_errors
from kubetrain.jobs.jobdraft import read_draft
from kubetrain.jobs.kubedl import kubedl_annotation_errors
from kubetrain.jobs.kubedllayout import map_path
from kubetrain.jobs.names import name_errors
from kubetrain.jobs.parse import InvalidJobError, check_type_meta, parse_model
from kubetrain.jobs.runpolicychecks import max_replicas_errors, run_policy_errors, total_replicas_of
from kubetrain.jobs.templates import replica_map_errors
from kubetrain.jobs.updates import update_errors

# The operator-wide limit on the total replicas of one job (`--max-replicas-per-job`).
DEFAULT_MAX_REPLICAS = 10_000


@dataclass(frozen=True)
class ValidationResult:
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def validate_job(
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
    *,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
    groups: Sequence[str] = JOB_GROUPS,
) -> ValidationResult:
    """`validate_v1` of the job; a `training.kubedl.io` job is validated in kubetrain's layout,
    with KubeDL's unsupported fields refused and paths named as its own layout names them. The
    job is read once, here, by the parse stage (`jobdraft.read_draft`: its layout, the KubeDL
    fields refused, its annotations)."""
    if not isinstance(obj, dict):
        return validate_v1(obj, JobAnnotations(), old, max_replicas=max_replicas, groups=groups)
    draft = read_draft(obj)
    if not draft.converted:
        return validate_v1(obj, draft.annotations, old, max_replicas=max_replicas, groups=groups)
    before = read_draft(old).wire if isinstance(old, dict) else None
    result = validate_v1(draft.wire, draft.annotations, before, max_replicas=max_replicas, groups=groups)
    mapped = [dataclasses.replace(e, path=map_path(e.path, obj)) for e in result.errors]
    return ValidationResult(_unique([*draft.errors, *mapped]), result.warnings)


def validate_v1(
    obj: dict[str, Any],
    annotations: JobAnnotations,
    old: dict[str, Any] | None = None,
    *,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
    groups: Sequence[str] = JOB_GROUPS,
) -> ValidationResult:
    """Every problem of `obj` (a defaulted job); `annotations` its annotations as read at the
    edge (`read_annotations`); `old` is the stored object on UPDATE;
    `max_replicas` is the operator's limit on the job's total replicas; `groups` the API groups
    whose apiVersion is accepted (kubetrain.api.groups).

    On update, a change that leaves `spec` as it was (metadata, status) is never blocked —
    except a change of the `kubetrain.io/service-mode` annotation.
    """
    mode_errors = service_mode_errors(obj, old) if isinstance(obj, dict) else []
    if (
        old is not None
        and isinstance(obj, dict)
        and isinstance(old, dict)
        and obj.get("spec") == old.get("spec")
    ):
        return ValidationResult(mode_errors)
    type_errors = check_type_meta(obj, groups)
    if type_errors:
        return ValidationResult(type_errors)
    framework = get_framework(obj["kind"])
    assert framework is not None
    errors: list[FieldError] = list(mode_errors)
    warnings: list[str] = []
    job: JobBase | None = None
    try:
        job = parse_model(obj, framework.job_model)  # its kind and apiVersion are checked above
    except InvalidJobError as exc:
        errors.extend(exc.errors)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        if spec is None:
            errors.append(required("spec", f"a {framework.kind} needs a spec with {framework.replica_field}"))
        return ValidationResult(_unique(errors), warnings)
    replica_map = spec.get(framework.replica_field)
    errors.extend(name_errors(obj.get("metadata"), replica_map, spec, framework))
    errors.extend(replica_map_errors(replica_map, framework, warnings))
    errors.extend(run_policy_errors(spec.get("runPolicy"), replica_map))
    errors.extend(max_replicas_errors(spec, framework, max_replicas))
    errors.extend(annotations.host_network.errors_for(total_replicas_of(replica_map)))
    errors.extend(kubedl_annotation_errors(annotations.kubedl, spec, framework.replica_field))
    errors.extend(annotations.progress_errors)
    run_policy = spec.get("runPolicy")
    if isinstance(run_policy, dict):
        errors.extend(pod_failure_policy_errors(run_policy.get("podFailurePolicy"), replica_map))
    if job is not None:
        errors.extend(framework.validate_spec(job, "spec"))
    if old is not None and isinstance(old.get("spec"), dict):
        errors.extend(update_errors(spec, old["spec"], framework))
    return ValidationResult(_unique(errors), warnings)


def _unique(errors: list[FieldError]) -> list[FieldError]:
    return list(dict.fromkeys(errors))
