"""Validation (docs/behaviour.md §3) of a job in wire form, on create and on update.

`validate_job` reports every problem at once: type errors from the model, the common rules
(names, replica map, templates, run policy), the framework's own rules (`Framework.validate_spec`)
and, on update, the immutability rules. Each error is a `FieldError` with the Kubernetes field
path, a kind and a message that says what would be valid. Warnings are returned separately
(they become AdmissionReview `warnings`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from kubetrain.api.common import JobBase
from kubetrain.api.errors import (
    RECREATE,
    ErrorKind,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    join_path,
    not_supported,
    required,
)
from kubetrain.api.groups import JOB_GROUPS
from kubetrain.api.podresources import replica_count
from kubetrain.api.podtemplate import (
    NOT_JSON,
    TEMPLATE_CACHE,
    containers_of,
    default_container_warning,
    schema_errors_of,
    template_from_key,
    template_key,
)
from kubetrain.api.quantity import QUANTITY_EXAMPLES, is_quantity_string
from kubetrain.api.servicemode import service_mode_errors
from kubetrain.frameworks import hostnetwork
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.failurepolicy import pod_failure_policy_errors
from kubetrain.jobs.kubedl import kubedl_annotation_errors
from kubetrain.jobs.parse import InvalidJobError, check_type_meta, parse_job

DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_LABEL_LENGTH = 63
# generateName gets 5 random characters appended by the API server.
GENERATED_SUFFIX_LENGTH = 5
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
    """Every problem of `obj` (a defaulted job); `old` is the stored object on UPDATE;
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
        job = parse_job(obj, groups)
    except InvalidJobError as exc:
        errors.extend(exc.errors)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        if spec is None:
            errors.append(required("spec", f"a {framework.kind} needs a spec with {framework.replica_field}"))
        return ValidationResult(_unique(errors), warnings)
    replica_map = spec.get(framework.replica_field)
    errors.extend(_name_errors(obj.get("metadata"), replica_map, spec, framework))
    errors.extend(_replica_map_errors(replica_map, framework, warnings))
    errors.extend(_run_policy_errors(spec.get("runPolicy"), replica_map))
    errors.extend(_max_replicas_errors(spec, framework, max_replicas))
    errors.extend(hostnetwork.annotation_errors(obj, _total(replica_map)))
    errors.extend(kubedl_annotation_errors(obj))
    run_policy = spec.get("runPolicy")
    if isinstance(run_policy, dict):
        errors.extend(pod_failure_policy_errors(run_policy.get("podFailurePolicy"), replica_map))
    if job is not None:
        errors.extend(framework.validate_spec(job, "spec"))
    if old is not None and isinstance(old.get("spec"), dict):
        errors.extend(_update_errors(spec, old["spec"], framework))
    return ValidationResult(_unique(errors), warnings)


def _unique(errors: list[FieldError]) -> list[FieldError]:
    return list(dict.fromkeys(errors))


def _int(value: Any) -> int | None:
    """`value` when it is a JSON integer (bools are not), else None (type errors come from the model)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------------------------
# metadata.name


def _name_errors(
    metadata: Any, replica_map: Any, spec: dict[str, Any], framework: Framework
) -> list[FieldError]:
    if not isinstance(metadata, dict):
        return [required("metadata.name", "a job needs a name (a DNS-1035 label)")]
    name = metadata.get("name")
    path = "metadata.name"
    budget_reserve = 0
    if not name:
        generate = metadata.get("generateName")
        if not isinstance(generate, str) or not generate:
            return [required(path, "a job needs a name (a DNS-1035 label) or metadata.generateName")]
        path, name, budget_reserve = "metadata.generateName", generate + "x" * GENERATED_SUFFIX_LENGTH, 5
    if not isinstance(name, str):
        return [invalid(path, "must be a string")]
    shown = name[: len(name) - budget_reserve] if budget_reserve else name
    if len(name) > MAX_LABEL_LENGTH or not DNS1035_LABEL.match(name):
        return [
            invalid(
                path,
                f"{shown!r} is not a DNS-1035 label: at most {MAX_LABEL_LENGTH - budget_reserve} lower-case "
                "letters, digits and '-', starting with a letter and ending with a letter or digit",
            )
        ]
    longest = ""
    if isinstance(replica_map, dict):
        for rtype, rspec in replica_map.items():
            replicas = replica_count(rspec) if isinstance(rspec, dict) else None
            # A scalable type (elastic Workers) may be scaled up to its maximum.
            replicas = framework.most_replicas(spec, str(rtype), 1 if replicas is None else replicas)
            pod = f"{name}-{str(rtype).lower()}-{max(replicas - 1, 0)}"
            if len(pod) > len(longest):
                longest = pod
    if len(longest) > MAX_LABEL_LENGTH:
        allowed = MAX_LABEL_LENGTH - (len(longest) - len(name)) - budget_reserve
        return [
            invalid(
                path,
                f"{shown!r} is too long: the pod name {longest!r} would be {len(longest)} characters "
                f"(pod names are host names: at most {MAX_LABEL_LENGTH}); use at most {max(allowed, 0)} "
                "characters for this job",
            )
        ]
    return []


# ---------------------------------------------------------------------------------------------
# replica map and templates


def _replica_map_errors(replica_map: Any, framework: Framework, warnings: list[str]) -> list[FieldError]:
    map_path = f"spec.{framework.replica_field}"
    valid_types = framework.replica_types
    if replica_map is None or replica_map == {}:
        return [required(map_path, f"at least one replica type is needed, one of {', '.join(valid_types)}")]
    if not isinstance(replica_map, dict):
        return []  # the model reports the type error
    errors: list[FieldError] = []
    # The spelling each replica type is known by: the canonical one when present, else the first.
    canonical = {t.lower(): t for t in valid_types}
    primary: dict[str, str] = {}
    for rtype in replica_map:
        lowered = str(rtype).lower()
        if lowered not in primary or rtype == canonical.get(lowered):
            primary[lowered] = str(rtype)
    for rtype, rspec in replica_map.items():
        path = f"{map_path}[{rtype}]"
        lowered = str(rtype).lower()
        if str(rtype) != primary[lowered]:
            errors.append(
                duplicate(
                    path,
                    f'same replica type as "{primary[lowered]}" (replica type names ignore case); '
                    "keep one of them",
                )
            )
        if rtype not in valid_types and lowered not in {t.lower() for t in valid_types}:
            errors.append(not_supported(path, rtype, valid_types))
        if not isinstance(rspec, dict):
            continue
        replicas = _int(rspec.get("replicas"))
        if replicas is not None and replicas < 0:
            errors.append(invalid(f"{path}.replicas", f"must be greater than or equal to 0, got {replicas}"))
        errors.extend(_template_errors(rspec.get("template"), f"{path}.template", framework, warnings))
    return errors


def _template_errors(template: Any, path: str, framework: Framework, warnings: list[str]) -> list[FieldError]:
    if template is None or template == {}:
        return [required(f"{path}.spec.containers", "a pod template with at least one container is needed")]
    if not isinstance(template, dict):
        return []  # the model reports the type error
    # Everything below depends only on the template's content: computed once per distinct
    # template (and framework), then a cache hit costs one `template_key`.
    key = template_key(template)
    findings = None if key is None else _template_findings(key, framework.kind)
    if findings is None:
        return [invalid(path, NOT_JSON)]
    rel_errors, rel_warnings = findings
    warnings.extend(path + w for w in rel_warnings)
    return [FieldError(path + rel, kind, msg) for rel, kind, msg in rel_errors]


_Findings = tuple[tuple[tuple[str, ErrorKind, str], ...], tuple[str, ...]]


def _template_findings(key: bytes | str, kind: str) -> _Findings | None:
    """Errors (relative path, kind, message) and warnings (text after the template's path) of
    the template `key` stands for; None when it is not JSON data. Cached in TEMPLATE_CACHE."""
    hit = TEMPLATE_CACHE.get((key, kind))
    if hit is not None:
        return cast(_Findings, hit)
    findings = _compute_template_findings(key, kind)
    if findings is not None:
        cost = len(key) + sum(len(m) + len(p) + 64 for p, _, m in findings[0]) + sum(map(len, findings[1]))
        TEMPLATE_CACHE.put((key, kind), findings, cost=cost + 256)
    return findings


def _compute_template_findings(key: bytes | str, kind: str) -> _Findings | None:
    try:
        template = template_from_key(key)  # decoded once: a large template costs one decode
    except (TypeError, ValueError, RecursionError):
        return None
    schema_errors = schema_errors_of(template)
    framework = get_framework(kind)
    if schema_errors is None or framework is None:
        return None
    errors = [FieldError(rel, k, msg) for rel, k, msg in schema_errors]
    warnings: list[str] = []
    containers = containers_of(template)
    containers_path = ".spec.containers"
    if not containers:
        if not any(e.path.startswith(containers_path) for e in errors):
            errors.append(required(containers_path, "at least one container is needed"))
    else:
        _container_findings(containers, containers_path, framework, errors, warnings)
    return tuple((e.path, e.kind, e.message) for e in errors), tuple(warnings)


def _container_findings(
    containers: list[Any],
    containers_path: str,
    framework: Framework,
    errors: list[FieldError],
    warnings: list[str],
) -> None:
    names: dict[str, int] = {}
    has_framework_container = False
    for i, container in enumerate(containers):
        if not isinstance(container, dict):
            continue
        cpath = join_path(containers_path, i)
        image = container.get("image")
        if image is None or image == "":
            errors.append(required(f"{cpath}.image", "every container needs an image"))
        name = container.get("name")
        if isinstance(name, str):
            if name in names:
                errors.append(
                    duplicate(f"{cpath}.name", f"{name!r} is also the name of containers[{names[name]}]")
                )
            names.setdefault(name, i)
            has_framework_container = has_framework_container or name == framework.container_name
        env = container.get("env")
        if isinstance(env, list):
            for j, var in enumerate(env):
                if isinstance(var, dict) and var.get("name") in framework.operator_env_names:
                    warnings.append(
                        f"{cpath}.env[{j}]: {var['name']} is also set by kubetrain for {framework.kind} "
                        "pods; your value is used instead of the operator's"
                    )
    if has_framework_container or not framework.container_name:
        return  # no container_name: container 0 is the framework's (MPI)
    if framework.framework_container_required:
        errors.append(
            required(
                containers_path,
                f'must have a container named "{framework.container_name}" ({framework.kind} pods '
                f"get their {framework.port_name} port and cluster environment there)",
            )
        )
    elif isinstance(containers[0], dict):
        warnings.append(default_container_warning(containers_path, containers[0], framework.container_name))


# ---------------------------------------------------------------------------------------------
# runPolicy


def _run_policy_errors(run_policy: Any, replica_map: Any) -> list[FieldError]:
    if not isinstance(run_policy, dict):
        return []
    errors: list[FieldError] = []
    for name, minimum in (("backoffLimit", 0), ("activeDeadlineSeconds", 1), ("ttlSecondsAfterFinished", 0)):
        value = _int(run_policy.get(name))
        if value is not None and value < minimum:
            errors.append(
                invalid(f"spec.runPolicy.{name}", f"must be greater than or equal to {minimum}, got {value}")
            )
    scheduling = run_policy.get("schedulingPolicy")
    if not isinstance(scheduling, dict):
        return errors
    base = "spec.runPolicy.schedulingPolicy"
    min_available = _int(scheduling.get("minAvailable"))
    total = _total(replica_map)
    if min_available is not None and (min_available < 1 or (total is not None and min_available > total)):
        upper = f"{total} (the total of replicas)" if total is not None else "the total of replicas"
        errors.append(invalid(f"{base}.minAvailable", f"must be between 1 and {upper}, got {min_available}"))
    timeout = _int(scheduling.get("scheduleTimeoutSeconds"))
    if timeout is not None and timeout < 0:
        errors.append(
            invalid(f"{base}.scheduleTimeoutSeconds", f"must be greater than or equal to 0, got {timeout}")
        )
    resources = scheduling.get("minResources")
    if isinstance(resources, dict):
        for rname, quantity in resources.items():
            if isinstance(quantity, str) and not is_quantity_string(quantity):
                errors.append(
                    invalid(
                        f"{base}.minResources[{rname}]",
                        f"{quantity!r} is not a valid quantity: use e.g. {QUANTITY_EXAMPLES}",
                    )
                )
    return errors


def _max_replicas_errors(spec: dict[str, Any], framework: Framework, limit: int) -> list[FieldError]:
    """The job's replicas (a scalable type counted at its maximum) against the operator's limit."""
    replica_map = spec.get(framework.replica_field)
    total = _total(replica_map)
    if total is None or not isinstance(replica_map, dict):
        return []
    most = sum(
        framework.most_replicas(spec, str(rtype), _int(rspec.get("replicas", 1)) or 0)
        for rtype, rspec in replica_map.items()
        if isinstance(rspec, dict)
    )
    if most <= limit:
        return []
    scaled = (
        f" ({framework.scalable_replica_type}s counted at the maximum of {framework.bounds_name})"
        if most > total
        else ""
    )
    return [
        invalid(
            f"spec.{framework.replica_field}",
            f"the job has {most} replicas in total{scaled}; this operator allows at most {limit} "
            "replicas per job (--max-replicas-per-job)",
        )
    ]


def _total(replica_map: Any) -> int | None:
    if not isinstance(replica_map, dict):
        return None
    total = 0
    for rspec in replica_map.values():
        replicas = _int(rspec.get("replicas", 1)) if isinstance(rspec, dict) else None
        if replicas is None:
            return None
        total += replicas
    return total


# ---------------------------------------------------------------------------------------------
# update


def _suspended(spec: dict[str, Any]) -> bool:
    run_policy = spec.get("runPolicy")
    return isinstance(run_policy, dict) and run_policy.get("suspend") is True


def _update_errors(spec: dict[str, Any], old_spec: dict[str, Any], framework: Framework) -> list[FieldError]:
    errors: list[FieldError] = []
    field_name = framework.replica_field
    new_map, old_map = spec.get(field_name), old_spec.get(field_name)
    if not isinstance(new_map, dict) or not isinstance(old_map, dict):
        return errors
    was_suspended = _suspended(old_spec)
    if set(new_map) != set(old_map):
        errors.append(
            forbidden(
                f"spec.{field_name}",
                f"the set of replica types is immutable (was {', '.join(map(str, old_map))}; "
                f"now {', '.join(map(str, new_map))}): {RECREATE}",
            )
        )
    scalable = framework.replica_bounds(spec) is not None
    for rtype, rspec in new_map.items():
        old_rspec = old_map.get(rtype)
        if not isinstance(rspec, dict) or not isinstance(old_rspec, dict):
            continue
        path = f"spec.{field_name}[{rtype}]"
        template, old_template = rspec.get("template"), old_rspec.get("template")
        if template != old_template and not (
            (was_suspended or _suspended(spec)) and _scheduling_change_only(template, old_template)
        ):
            errors.append(
                forbidden(
                    f"{path}.template",
                    "the pod template is immutable, except its scheduling directives (labels, "
                    f"annotations, {', '.join(SCHEDULING_DIRECTIVES)}) while the job is or becomes "
                    f"suspended: {RECREATE}",
                )
            )
        replicas_changed = rspec.get("replicas", 1) != old_rspec.get("replicas", 1)
        resizable = scalable and rtype == framework.scalable_replica_type
        if replicas_changed and not was_suspended and not resizable:
            errors.append(
                forbidden(
                    f"{path}.replicas",
                    "can only change while the job is suspended (spec.runPolicy.suspend: true)"
                    + (f"; {framework.scale_hint}" if scalable and framework.scale_hint else ""),
                )
            )
    errors.extend(framework.validate_update(spec, old_spec))
    new_rp = _mapping(spec.get("runPolicy"))
    old_rp = _mapping(old_spec.get("runPolicy"))
    if new_rp.get("managedBy") != old_rp.get("managedBy"):
        errors.append(forbidden("spec.runPolicy.managedBy", f"is immutable: {RECREATE}"))
    new_sp = _mapping(new_rp.get("schedulingPolicy"))
    old_sp = _mapping(old_rp.get("schedulingPolicy"))
    if new_sp.get("queue") != old_sp.get("queue") and not was_suspended:
        errors.append(
            forbidden(
                "spec.runPolicy.schedulingPolicy.queue",
                "can only change while the job is suspended (spec.runPolicy.suspend: true); "
                f"otherwise {RECREATE}",
            )
        )
    return errors


# Pod template fields a queueing controller (Kueue) sets when it admits a suspended job and
# restores when it suspends it again — Kubernetes' mutable scheduling directives of a suspended
# Job (KEP-2926), plus the template's labels and annotations.
SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "affinity", "schedulingGates")


def _scheduling_change_only(template: Any, old_template: Any) -> bool:
    """Whether two pod templates differ at most in their scheduling directives."""
    if not isinstance(template, dict) or not isinstance(old_template, dict):
        return False

    def rest(t: dict[str, Any]) -> tuple[Any, Any, Any]:
        meta = {k: v for k, v in _mapping(t.get("metadata")).items() if k not in ("labels", "annotations")}
        spec = {k: v for k, v in _mapping(t.get("spec")).items() if k not in SCHEDULING_DIRECTIVES}
        others = {k: v for k, v in t.items() if k not in ("metadata", "spec")}
        return meta, spec, others

    return rest(template) == rest(old_template)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
