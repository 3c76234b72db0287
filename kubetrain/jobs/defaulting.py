"""Defaulting (docs/behaviour.md §2) on the wire form of a job.

`default_job` works on the plain dict the API server stores (camelCase keys), so the mutating
webhook can diff input and output into a JSONPatch, and so fields kubetrain does not model (pod
template fields of newer Kubernetes versions, unknown keys) are carried over untouched, in their
original order. It is pure (the input is never mutated) and idempotent. `default_v1` takes the
job as the parse stage read it (`jobdraft.JobDraft`: its replica drafts, annotations) and gives
the defaulted job's draft with it, which the type, validate and lay-out stages take.

Copy-on-write: only the dicts and lists on the path to a value defaulting sets are copied (the
job, its spec, the replica map and each replica spec, a runPolicy, a container whose ports get
the framework port…); everything else — pod templates without changes, metadata, status — is
shared with the input. `copy.deepcopy` of a large job used to be most of the mutating webhook's
time. Callers treat both the input and the result as read-only (copy before changing either).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from kubetrain.api.common import DEFAULT_CLEAN_POD_POLICY
from kubetrain.api.podtemplate import default_container_warning
from kubetrain.frameworks.base import Adjustment, Framework, Gates
from kubetrain.jobs.failurepolicy import default_pod_failure_policy
from kubetrain.jobs.jobdraft import JobDraft, read_draft
from kubetrain.jobs.kubedllayout import from_v1
from kubetrain.jobs.replicadraft import ReplicaDraft
from kubetrain.jobs.tenancy import default_tenancy_labels
from kubetrain.jobs.untypedfields import keep_untyped_fields


@dataclass(frozen=True)
class Defaulted:
    obj: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    # The defaulted job in kubetrain's layout as the next stages read it: the parse stage's
    # draft with the defaulted wire dict and replica drafts (None: `obj` was not read).
    draft: JobDraft | None = None
    # What the controller changed to run the job (`Framework.adjust`: elastic Workers clamped).
    adjustments: list[str] = field(default_factory=list)
    # The framework's gates of the defaulted spec (`Framework.spec_gates`), read once: the gang
    # size leaves the gated types out, the lay-out makes them `depends_on`.
    gates: Gates = field(default_factory=dict)


def default_job(
    obj: dict[str, Any], *, gang_scheduling: bool = False, old: dict[str, Any] | None = None
) -> Defaulted:
    """`default_v1` of the job; a `training.kubedl.io` job is defaulted in kubetrain's layout and
    comes back in KubeDL's (kubetrain.jobs.kubedllayout). The job is read once, here, by the
    parse stage (`jobdraft.read_draft`: its layout, replica map and annotations)."""
    if not isinstance(obj, dict):
        return Defaulted(copy.deepcopy(obj))
    obj = keep_untyped_fields(obj, old)  # what Kubeflow's types cannot send back
    draft = read_draft(obj)
    before = read_draft(old) if isinstance(old, dict) else None
    result = default_v1(draft, gang_scheduling=gang_scheduling, old=before)
    if not draft.converted:
        return result
    return Defaulted(from_v1(result.obj, obj), result.warnings, result.draft)


def default_v1(
    draft: JobDraft, *, gang_scheduling: bool = False, old: JobDraft | None = None, adjust: bool = False
) -> Defaulted:
    """The job of `draft` (the parse stage's) with every §2 default filled in, and the warnings
    defaulting produced.

    A job of an unknown kind (or one too malformed to default) comes back unchanged; the
    validation step reports what is wrong with it. `old` is the stored job's draft on UPDATE: a
    `minAvailable` that still holds the gang default of the stored job follows a replica change.
    `adjust`: the controller's changes to run the stored job too (`Framework.adjust`).
    """
    obj, framework = draft.wire, draft.framework
    spec = obj.get("spec")
    if framework is None or not isinstance(spec, dict):
        unchanged = copy.deepcopy(obj)
        return Defaulted(unchanged, [], replace(draft, wire=unchanged))
    out = dict(obj)
    spec = out["spec"] = dict(spec)
    warnings: list[str] = []
    default_tenancy_labels(out, draft.annotations.kubedl.tenancy)  # KubeDL's tenancy annotation
    replicas = draft.replicas
    if replicas is not None:
        replicas = tuple(_default_replica(r, framework, warnings) for r in replicas)
        spec[framework.replica_field] = {r.key: r.spec for r in replicas}
    failure_policy = default_pod_failure_policy(draft.pod_failure_policy)
    if failure_policy is not draft.pod_failure_policy:  # then runPolicy is a dict (the parse stage's read)
        spec["runPolicy"] = {**spec["runPolicy"], "podFailurePolicy": failure_policy}
    # The framework's part, in one place. Its defaults first: the gang default depends on them
    # (an elastic job's minimum).
    counts = {r.key: r.count for r in replicas} if replicas is not None else None
    warnings.extend(framework.default_spec(spec, counts or {}))
    gates = framework.spec_gates(spec)
    total = framework.gang_size(spec, counts, gates) if gang_scheduling and counts is not None else None
    old_spec = old.wire.get("spec") if old is not None else None
    old_total = None
    if total is not None and old is not None and isinstance(old_spec, dict) and old.replicas is not None:
        old_total = framework.gang_size(old_spec, old.counts, framework.spec_gates(old_spec))
    adjustments = framework.adjust(spec, counts) if adjust and counts is not None else []
    _default_run_policy(spec, total, old_spec if isinstance(old_spec, dict) else None, old_total)
    if gang_scheduling and replicas is not None:
        warnings.extend(_scheduler_name_warnings(replicas))
    if adjustments:
        replicas = _adjusted(replicas or (), adjustments)
    defaulted = replace(draft, wire=out, replicas=replicas, pod_failure_policy=failure_policy)
    return Defaulted(out, warnings, defaulted, [a.message for a in adjustments], gates)


def _scheduler_name_warnings(replicas: tuple[ReplicaDraft, ...]) -> list[str]:
    """docs/behaviour.md §8: a user-set schedulerName is kept under gang scheduling, with a warning."""
    warnings: list[str] = []
    for r in replicas:
        tspec = r.template.get("spec") if isinstance(r.template, dict) else None
        name = tspec.get("schedulerName") if isinstance(tspec, dict) else None
        if isinstance(name, str) and name:
            warnings.append(
                f'{r.path}.template.spec.schedulerName: "{name}" is kept; the gang scheduler\'s name '
                "is only set on pods without one, so these pods are gang-scheduled only if that "
                "scheduler honours the PodGroup"
            )
    return warnings


def _default_replica(r: ReplicaDraft, framework: Framework, warnings: list[str]) -> ReplicaDraft:
    """The replica spec of `r` defaulted (a copy; the template copied only where it changes),
    under its canonical key, as its draft."""
    if not isinstance(r.spec, dict):
        return r.evolve(key=r.type)
    rspec = dict(r.spec)
    rtype = str(r.type)
    if rspec.get("replicas") is None:
        rspec["replicas"] = framework.replicas_default(rtype)
    if rspec.get("restartPolicy") is None:
        rspec["restartPolicy"] = framework.restart_policy_default(rtype)
    out = r.evolve(key=r.type, spec=rspec, replicas=rspec["replicas"])
    replaced = _template_restart_policy_warning(out.path, r.template, rspec["restartPolicy"])
    if replaced is not None:
        warnings.append(replaced)
    index, template = r.container_index, r.template
    if not framework.container_name or index is None or not isinstance(template, dict):
        return out  # no container_name: container 0 is the framework container, no port added
    container = r.containers[index]
    if not isinstance(container, dict):
        return out
    if container.get("name") != framework.container_name and not framework.framework_container_required:
        path = f"{out.path}.template.spec.containers"
        warnings.append(default_container_warning(path, container, framework.container_name))
    ports = container.get("ports")
    if ports is None:
        ports = []
    elif not isinstance(ports, list) or any(
        isinstance(p, dict) and p.get("name") == framework.port_name for p in ports
    ):
        return out
    # Copy-on-write along template.spec.containers[index].ports (the rest of the template is shared).
    template = rspec["template"] = dict(template)
    template_spec = template["spec"] = dict(template["spec"])
    containers = template_spec["containers"] = list(template_spec["containers"])
    container = containers[index] = dict(container)
    container["ports"] = [*ports, {"name": framework.port_name, "containerPort": framework.default_port}]
    return out.evolve(template=template, containers=containers)


def _template_restart_policy_warning(path: str, template: Any, replica_policy: Any) -> str | None:
    """The pods' restartPolicy is the replica's (ExitCode: Never, docs/behaviour.md §4); a
    different one in the pod template is replaced, which the user is told at admission
    (Kubeflow's operator told it only by a Warning event per pod it created,
    `SetPodTemplateRestartPolicy`; Kubeflow Trainer issue 2200)."""
    tspec = template.get("spec") if isinstance(template, dict) else None
    written = tspec.get("restartPolicy") if isinstance(tspec, dict) else None
    if not isinstance(written, str) or not written or not isinstance(replica_policy, str):
        return None
    pod_policy = "Never" if replica_policy == "ExitCode" else replica_policy
    if written == pod_policy:
        return None
    return (
        f'{path}.template.spec.restartPolicy: "{written}" is replaced by "{pod_policy}" on the pods, '
        f"from the replica's restartPolicy \"{replica_policy}\"; set the replica's restartPolicy "
        "instead (for pods recreated on failure rather than restarted in place: restartPolicy "
        "Never with a runPolicy.podFailurePolicy rule of action Count)"
    )


def _min_available(spec: dict[str, Any]) -> Any:
    run_policy = spec.get("runPolicy")
    scheduling = run_policy.get("schedulingPolicy") if isinstance(run_policy, dict) else None
    return scheduling.get("minAvailable") if isinstance(scheduling, dict) else None


def _default_run_policy(
    spec: dict[str, Any], total: int | None, old_spec: dict[str, Any] | None, old_total: int | None
) -> None:
    """cleanPodPolicy, suspend and, under gang scheduling, `minAvailable`: `total`, the gang
    size the framework gives (`old_total`: the stored job's, on UPDATE)."""
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
    elif current != total and old_spec is not None and current == _min_available(old_spec) == old_total:
        # UPDATE: the stored job's minAvailable was its gang default and is left as it was →
        # it follows the new replica counts (a user-chosen value is kept).
        run_policy["schedulingPolicy"] = {**scheduling, "minAvailable": total}


def _adjusted(replicas: tuple[ReplicaDraft, ...], adjustments: list[Adjustment]) -> tuple[ReplicaDraft, ...]:
    """The controller's counts written into the defaulted replica specs (defaulting's own copies)."""
    counts = {a.replica_type: a.replicas for a in adjustments}
    out = []
    for r in replicas:
        if r.key in counts and isinstance(r.spec, dict):
            r.spec["replicas"] = counts[r.key]
            r = r.evolve(replicas=counts[r.key])
        out.append(r)
    return tuple(out)
