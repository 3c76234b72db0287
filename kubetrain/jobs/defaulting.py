"""Defaulting (docs/behaviour.md §2) on the wire form of a job.

`default_job` works on the plain dict the API server stores (camelCase keys), so the mutating
webhook can diff input and output into a JSONPatch, and so fields kubetrain does not model (pod
template fields of newer Kubernetes versions, unknown keys) are carried over untouched, in their
original order. It is pure (the input is never mutated) and idempotent.

Copy-on-write: only the dicts and lists on the path to a value defaulting sets are copied (the
job, its spec, the replica map and each replica spec, a runPolicy, a container whose ports get
the framework port…); everything else — pod templates without changes, metadata, status — is
shared with the input. `copy.deepcopy` of a large job used to be most of the mutating webhook's
time. Callers treat both the input and the result as read-only (copy before changing either).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.common import DEFAULT_CLEAN_POD_POLICY
from kubetrain.api.errors import join_path
from kubetrain.api.podtemplate import containers_of, default_container_warning, framework_container_index
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.annotations import JobAnnotations
from kubetrain.jobs.failurepolicy import default_pod_failure_policy
from kubetrain.jobs.jobdraft import read_draft
from kubetrain.jobs.kubedllayout import from_v1
from kubetrain.jobs.tenancy import default_tenancy_labels


@dataclass(frozen=True)
class Defaulted:
    obj: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def default_job(
    obj: dict[str, Any], *, gang_scheduling: bool = False, old: dict[str, Any] | None = None
) -> Defaulted:
    """`default_v1` of the job; a `training.kubedl.io` job is defaulted in kubetrain's layout and
    comes back in KubeDL's (kubetrain.jobs.kubedllayout). The job is read once, here, by the
    parse stage (`jobdraft.read_draft`: its layout and its annotations)."""
    draft = read_draft(obj) if isinstance(obj, dict) else None
    if draft is None or not draft.converted:
        annotations = draft.annotations if draft is not None else JobAnnotations()
        return default_v1(obj, annotations, gang_scheduling=gang_scheduling, old=old)
    before = read_draft(old).wire if isinstance(old, dict) else None
    result = default_v1(draft.wire, draft.annotations, gang_scheduling=gang_scheduling, old=before)
    return Defaulted(from_v1(result.obj, obj), result.warnings)


def default_v1(
    obj: dict[str, Any],
    annotations: JobAnnotations,
    *,
    gang_scheduling: bool = False,
    old: dict[str, Any] | None = None,
) -> Defaulted:
    """The job with every §2 default filled in, and the warnings defaulting produced; `annotations`
    are the job's annotations as read at the edge (`read_annotations`).

    An object of an unknown kind (or one too malformed to default) comes back unchanged; the
    validation step reports what is wrong with it. `old` is the stored job on UPDATE: a
    `minAvailable` that still holds the gang default of the stored job follows a replica change.
    """
    if not isinstance(obj, dict):
        return Defaulted(copy.deepcopy(obj))
    kind = obj.get("kind")
    framework = get_framework(kind) if isinstance(kind, str) else None
    spec = obj.get("spec")
    if framework is None or not isinstance(spec, dict):
        return Defaulted(copy.deepcopy(obj))
    out = dict(obj)
    spec = out["spec"] = dict(spec)
    warnings: list[str] = []
    replica_map = spec.get(framework.replica_field)
    if isinstance(replica_map, dict):
        replica_map = canonical_replica_keys(replica_map, framework.replica_types)
        spec[framework.replica_field] = replica_map
        for rtype, rspec in replica_map.items():
            if isinstance(rspec, dict):
                rspec = replica_map[rtype] = dict(rspec)
                warnings.extend(_default_replica(rspec, framework, str(rtype)))
    # Framework defaults first: the gang default depends on them (an elastic job's minimum).
    warnings.extend(framework.default_spec(spec))
    old_spec = old.get("spec") if isinstance(old, dict) else None
    _default_run_policy(
        spec, replica_map, gang_scheduling, framework, old_spec if isinstance(old_spec, dict) else None
    )
    if gang_scheduling and isinstance(replica_map, dict):
        warnings.extend(_scheduler_name_warnings(replica_map, framework))
    default_tenancy_labels(out, annotations.kubedl.tenancy)  # KubeDL's tenancy annotation
    return Defaulted(out, warnings)


def _scheduler_name_warnings(replica_map: dict[str, Any], framework: Framework) -> list[str]:
    """docs/behaviour.md §8: a user-set schedulerName is kept under gang scheduling, with a warning."""
    warnings: list[str] = []
    for rtype, rspec in replica_map.items():
        template = rspec.get("template") if isinstance(rspec, dict) else None
        tspec = template.get("spec") if isinstance(template, dict) else None
        name = tspec.get("schedulerName") if isinstance(tspec, dict) else None
        if isinstance(name, str) and name:
            path = join_path("spec", framework.replica_field, f"[{rtype}]", "template.spec.schedulerName")
            warnings.append(
                f'{path}: "{name}" is kept; the gang scheduler\'s name is only set on pods without '
                "one, so these pods are gang-scheduled only if that scheduler honours the PodGroup"
            )
    return warnings


def canonical_replica_keys(replica_map: dict[str, Any], replica_types: tuple[str, ...]) -> dict[str, Any]:
    """Replica type keys renamed to their canonical spelling (`worker` → `Worker`), order kept.

    Keys that name the same replica type ignoring case (`worker` and `Worker`, or `worker` and
    `WORKER`) are all left as they are, whatever their order: renaming one onto the other would
    drop a replica spec, and renaming only some would depend on key order. Validation reports
    the duplicate (`Duplicate` at the second spelling).
    """
    canonical = {t.lower(): t for t in replica_types}
    spellings: dict[Any, int] = {}
    for key in replica_map:
        folded = key.lower() if isinstance(key, str) else key
        spellings[folded] = spellings.get(folded, 0) + 1
    renamed: dict[str, Any] = {}
    for key, value in replica_map.items():
        if isinstance(key, str) and spellings[key.lower()] == 1:
            key = canonical.get(key.lower(), key)
        renamed[key] = value
    return renamed


def _default_replica(rspec: dict[str, Any], framework: Framework, rtype: str) -> list[str]:
    if rspec.get("replicas") is None:
        rspec["replicas"] = framework.replicas_default(rtype)
    if rspec.get("restartPolicy") is None:
        rspec["restartPolicy"] = framework.restart_policy_default(rtype)
    if not framework.container_name:
        return []  # container 0 is the framework container, whatever its name; no port added
    template = rspec.get("template")
    index = framework_container_index(template, framework.container_name)
    if index is None or not isinstance(template, dict):
        return []
    container = containers_of(template)[index]
    if not isinstance(container, dict):
        return []
    warnings: list[str] = []
    if container.get("name") != framework.container_name and not framework.framework_container_required:
        path = join_path("spec", framework.replica_field, f"[{rtype}]", "template", "spec", "containers")
        warnings.append(default_container_warning(path, container, framework.container_name))
    ports = container.get("ports")
    if ports is None:
        ports = []
    elif not isinstance(ports, list) or any(
        isinstance(p, dict) and p.get("name") == framework.port_name for p in ports
    ):
        return warnings
    # Copy-on-write along template.spec.containers[index].ports (the rest of the template is shared).
    template = rspec["template"] = dict(template)
    template_spec = template["spec"] = dict(template["spec"])
    containers = template_spec["containers"] = list(template_spec["containers"])
    container = containers[index] = dict(container)
    container["ports"] = [*ports, {"name": framework.port_name, "containerPort": framework.default_port}]
    return warnings


def _min_available(spec: dict[str, Any]) -> Any:
    run_policy = spec.get("runPolicy")
    scheduling = run_policy.get("schedulingPolicy") if isinstance(run_policy, dict) else None
    return scheduling.get("minAvailable") if isinstance(scheduling, dict) else None


def _default_run_policy(
    spec: dict[str, Any],
    replica_map: Any,
    gang_scheduling: bool,
    framework: Framework,
    old_spec: dict[str, Any] | None,
) -> None:
    run_policy = spec.get("runPolicy")
    if run_policy is None:
        run_policy = {}
    elif not isinstance(run_policy, dict):
        return
    run_policy = spec["runPolicy"] = dict(run_policy)
    if run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = DEFAULT_CLEAN_POD_POLICY
    if run_policy.get("suspend") is None:
        run_policy["suspend"] = False
    default_pod_failure_policy(run_policy)
    if not gang_scheduling:
        return
    total = framework.gang_size(spec)
    if total is None:
        return
    scheduling = run_policy.get("schedulingPolicy")
    if scheduling is None:
        scheduling = {}
    if not isinstance(scheduling, dict):
        return
    current = scheduling.get("minAvailable")
    if current is None:
        run_policy["schedulingPolicy"] = {**scheduling, "minAvailable": total}
    elif old_spec is not None and current != total:
        # UPDATE: the stored job's minAvailable was its gang default and is left as it was →
        # it follows the new replica counts (a user-chosen value is kept).
        old_default = framework.gang_size(old_spec)
        if old_default is not None and current == _min_available(old_spec) == old_default:
            run_policy["schedulingPolicy"] = {**scheduling, "minAvailable": total}
