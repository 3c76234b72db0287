"""The replica map and its pod templates (docs/behaviour.md §3): replica type names (canonical,
no case-insensitive duplicates), replica counts, and each template — the upstream
PodTemplateSpec schema, images, container names, the framework container, operator-set env
names. A template's findings depend only on its content and are cached per distinct template."""

from __future__ import annotations

from typing import Any, cast

from kubetrain.api.errors import (
    QUOTE,
    ErrorKind,
    FieldError,
    duplicate,
    invalid,
    join_path,
    json_int,
    not_supported,
    required,
)
from kubetrain.api.podtemplate import (
    NOT_JSON,
    TEMPLATE_CACHE,
    containers_of,
    default_container_warning,
    schema_errors_of,
    template_from_key,
    template_key,
)
from kubetrain.frameworks.base import Framework
from kubetrain.jobs.replicadraft import ReplicaDraft


def replica_map_errors(
    replicas: tuple[ReplicaDraft, ...], framework: Framework, warnings: list[str]
) -> list[FieldError]:
    """The entries of a replica map (`replicas`, as read): their keys, counts and templates."""
    valid_types = framework.replica_types
    errors: list[FieldError] = []
    # Replica types whose templates are one object (kubetrain.webhook.sharedtemplates decodes
    # byte-identical ones once) key it once: the objects live through this call, so ids hold.
    keys: dict[int, bytes | str | None] = {}
    # The spelling each replica type is known by: the canonical one when present, else the first.
    canonical = {t.lower(): t for t in valid_types}
    primary: dict[str, str] = {}
    for r in replicas:
        lowered = str(r.key).lower()
        if lowered not in primary or r.key == canonical.get(lowered):
            primary[lowered] = str(r.key)
    for r in replicas:
        lowered = str(r.key).lower()
        if str(r.key) != primary[lowered]:
            errors.append(
                duplicate(
                    r.path,
                    f'same replica type as "{primary[lowered]}" (replica type names ignore case); '
                    "keep one of them",
                )
            )
        if lowered not in canonical:
            errors.append(not_supported(r.path, r.key, valid_types))
        if not isinstance(r.spec, dict):
            continue
        replicas_written = json_int(r.spec.get("replicas"))
        if replicas_written is not None and replicas_written < 0:
            errors.append(
                invalid(f"{r.path}.replicas", f"must be greater than or equal to 0, got {replicas_written}")
            )
        errors.extend(_template_errors(r.template, f"{r.path}.template", framework, warnings, keys))
    return errors


def _template_errors(
    template: Any, path: str, framework: Framework, warnings: list[str], keys: dict[int, bytes | str | None]
) -> list[FieldError]:
    if template is None or template == {}:
        return [required(f"{path}.spec.containers", "a pod template with at least one container is needed")]
    if not isinstance(template, dict):
        return []  # the model reports the type error
    # Everything below depends only on the template's content: computed once per distinct
    # template (and framework), then a cache hit costs one `template_key`.
    key = (
        keys[id(template)] if id(template) in keys else keys.setdefault(id(template), template_key(template))
    )
    findings = None if key is None else _template_findings(key, framework)
    if findings is None:
        return [invalid(path, NOT_JSON)]
    rel_errors, rel_warnings = findings
    if rel_warnings:
        warnings.extend(path + w for w in rel_warnings)
    return [FieldError(path + rel, kind, msg) for rel, kind, msg in rel_errors] if rel_errors else []


_Findings = tuple[tuple[tuple[str, ErrorKind, str], ...], tuple[str, ...]]


def _template_findings(key: bytes | str, framework: Framework) -> _Findings | None:
    """Errors (relative path, kind, message) and warnings (text after the template's path) of
    the template `key` stands for; None when it is not JSON data. Cached in TEMPLATE_CACHE."""
    hit = TEMPLATE_CACHE.get((key, framework.kind))
    if hit is not None:
        return cast(_Findings, hit)
    findings = _compute_template_findings(key, framework)
    if findings is not None:
        cost = len(key) + sum(len(m) + len(p) + 64 for p, _, m in findings[0]) + sum(map(len, findings[1]))
        TEMPLATE_CACHE.put((key, framework.kind), findings, cost=cost + 256)
    return findings


def _compute_template_findings(key: bytes | str, framework: Framework) -> _Findings | None:
    try:
        template = template_from_key(key)  # decoded once: a large template costs one decode
    except (TypeError, ValueError, RecursionError):
        return None
    schema_errors = schema_errors_of(template)
    if schema_errors is None:
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
                    duplicate(
                        f"{cpath}.name", f"{QUOTE.encode(name)} is also the name of containers[{names[name]}]"
                    )
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
