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

from kubetrain.api.errors import FieldError, invalid, required
from kubetrain.api.groups import JOB_GROUPS
from kubetrain.api.servicemode import check_service_mode
from kubetrain.jobs.createdversion import check_created_version
from kubetrain.jobs.failurepolicy import pod_failure_policy_errors
from kubetrain.jobs.jobdraft import JobDraft, read_draft
from kubetrain.jobs.kubedl import kubedl_annotation_errors, kubedl_annotation_warnings
from kubetrain.jobs.kubedllayout import map_path
from kubetrain.jobs.names import name_errors
from kubetrain.jobs.parse import TypedJob, read_typed
from kubetrain.jobs.runpolicychecks import max_replicas_errors, run_policy_errors
from kubetrain.jobs.templates import replica_map_errors
from kubetrain.jobs.typemeta import check_type_meta
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
    job (and the stored job on UPDATE) is read once, here, by the parse stage
    (`jobdraft.read_draft`: its layout, the KubeDL fields refused, its replica map and
    annotations)."""
    if not isinstance(obj, dict):
        return ValidationResult(check_type_meta(obj, groups))
    draft = read_draft(obj, groups=groups)
    converted = draft.converted
    before = read_draft(old) if isinstance(old, dict) else None
    # The job as typed (not needed when an update leaves the spec as it was).
    unchanged = before is not None and spec_unchanged(draft.wire, before.wire)
    typed = TypedJob() if unchanged else read_typed(draft)
    result = validate_v1(draft, typed, before, max_replicas=max_replicas)
    result.warnings.extend(kubedl_annotation_warnings(obj))
    if not converted:
        return result
    mapped = [dataclasses.replace(e, path=map_path(e.path, obj)) for e in result.errors]
    return ValidationResult(_unique([*draft.errors, *mapped]), result.warnings)


def spec_unchanged(obj: Any, old: Any) -> bool:
    """An update that leaves `spec` as it was (metadata, status): never blocked, except for a
    change of the `kubetrain.io/service-mode` or `kubetrain.io/created-api-version` annotation."""
    return isinstance(obj, dict) and isinstance(old, dict) and obj.get("spec") == old.get("spec")


def validate_v1(
    draft: JobDraft,
    typed: TypedJob,
    old: JobDraft | None = None,
    *,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
) -> ValidationResult:
    """Every problem of the (defaulted) job of `draft` (its wire dict, replica drafts and
    annotations as the parse stage read them, `jobdraft.read_draft`); `typed` the job read into
    its model (`parse.read_typed`, the type stage); `old` is the stored job's draft on UPDATE;
    `max_replicas` is the operator's limit on the job's total replicas.
    """
    obj, replicas, annotations = draft.wire, draft.replicas, draft.annotations
    before = old.wire if old is not None else None
    unchanged = before is not None and spec_unchanged(obj, before)
    annotation_errors = check_service_mode(
        annotations.service_mode,
        old.annotations.service_mode if old is not None else None,
        updating=old is not None,
    )
    annotation_errors += check_created_version(
        draft.served_versions,
        annotations.created_api_version,
        old.annotations.created_api_version if old is not None else None,
        updating=old is not None,
    )
    if unchanged:
        return ValidationResult(annotation_errors)
    if typed.type_errors:
        return ValidationResult(list(typed.type_errors))
    framework = typed.framework
    assert framework is not None
    errors: list[FieldError] = [*annotation_errors, *typed.errors]
    warnings: list[str] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        if spec is None:
            errors.append(required("spec", f"a {framework.kind} needs a spec with {framework.replica_field}"))
        return ValidationResult(_unique(errors), warnings)
    replica_map = spec.get(framework.replica_field)
    total = draft.total_replicas
    # The most pods each replica type can have: a scalable type (elastic Workers) its maximum.
    most = {
        r.key: framework.most_replicas(spec, str(r.key), 1 if r.count is None else r.count)
        for r in replicas or ()
    }
    errors.extend(name_errors(obj.get("metadata"), most))
    if replica_map is None or replica_map == {}:
        types = ", ".join(framework.replica_types)
        errors.append(
            required(
                f"spec.{framework.replica_field}", f"at least one replica type is needed, one of {types}"
            )
        )
    errors.extend(replica_map_errors(replicas or (), framework, warnings))
    errors.extend(run_policy_errors(spec.get("runPolicy"), total))
    errors.extend(max_replicas_errors(framework, most, total, max_replicas))
    errors.extend(annotations.host_network.errors_for(total))
    errors.extend(kubedl_annotation_errors(annotations.kubedl, replicas or ()))
    errors.extend(annotations.progress_errors)
    errors.extend(annotations.start_deadline_errors)
    errors.extend(pod_failure_policy_errors(draft.pod_failure_policy, replicas))
    if typed.model is not None:
        errors.extend(framework.validate_spec(typed.model, "spec"))
    replicas_path = f"spec.{framework.replica_field}"
    if total == 0 and replica_map and not any(e.path.startswith(replicas_path) for e in errors):
        # Kubeflow's controllers mark such a job Succeeded at once, without running anything
        # (a kind's own rule, e.g. JAX's or Paddle's Workers ≥ 1, says it more precisely).
        errors.append(
            invalid(
                replicas_path,
                "the job has no pods: at least one replica type needs replicas ≥ 1 "
                "(to pause a job, set runPolicy.suspend)",
            )
        )
    old_spec = before.get("spec") if before is not None else None
    if old is not None and isinstance(old_spec, dict):
        errors.extend(update_errors(spec, old_spec, replicas, old.replicas, framework))
    return ValidationResult(_unique(errors), warnings)


def _unique(errors: list[FieldError]) -> list[FieldError]:
    return list(dict.fromkeys(errors))
