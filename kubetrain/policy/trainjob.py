"""TrainingPolicy limits on a Kubeflow Trainer v2 TrainJob (a policy whose `kinds` is empty or
lists `TrainJob`), checked on the pods the TrainJob will run — its runtime resolved with its
overrides (`kubetrain.jobs.trainjob.resolve`) — so images and quotas cover what runs, whichever
of the runtime and the TrainJob set them. Lines and enforcement as `limits.check_policy_limits`:

- `maxReplicasPerJob`: every pod of every step (`spec.trainer.numNodes`);
- `maxTotalResources`: the steps' pods' effective resources summed;
- `maxActiveDeadlineSeconds`, `requireActiveDeadline`: `spec.activeDeadlineSeconds`;
- `requireTTL`: a TrainJob has no TTL of its own: the runtime template's
  `ttlSecondsAfterFinished` must be set (kubetrain does not apply it yet: a policy requiring TTL
  should not list TrainJob);
- `allowedImages`: every container of every step;
- `requiredLabels`: the TrainJob's labels;
- `podSecurity`: every step's pod template;
- `requireGangScheduling`: the runtime's `podGroupPolicy`.

`defaults` on CREATE (`apply_trainjob_defaults`, after Trainer's defaults, only to fields the
user left unset, the first policy by name winning — as for the other kinds): `labels` →
`metadata.labels`; `runPolicy.activeDeadlineSeconds` → `spec.activeDeadlineSeconds`;
`runPolicy.suspend` → `spec.suspend`; `runPolicy.managedBy` → `spec.managedBy` when it is a
TrainJob manager (`kueue.x-k8s.io/multikueue`; kubetrain's own `kubetrain.io/operator` is the
TrainJob controller, already the default). The rest — `cleanPodPolicy`,
`ttlSecondsAfterFinished`, `backoffLimit`, `schedulingPolicy` — has no TrainJob field (those
are the runtime's): not applied, and listed in `skipped` (the webhook warns).
Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.podresources import pod_amounts, pod_containers
from kubetrain.api.policy import PolicyLimits, TrainingPolicy
from kubetrain.api.quantity import format_quantity, is_binary, parse_quantity
from kubetrain.api.trainer import constants as c
from kubetrain.jobs.trainjob.model import ResolvedTrainJob, Step
from kubetrain.policy.defaults import PolicyDefaulted, apply_policy_defaults
from kubetrain.policy.images import image_allowed, normalize_image
from kubetrain.policy.limits import PolicyVerdict
from kubetrain.policy.matching import select_by_job_labels
from kubetrain.policy.podsecurity import pod_security_errors


def step_path(step: Step) -> str:
    """Where a step's pods come from, for messages: the trainer's are the TrainJob's."""
    if step.ancestor == c.ANCESTOR_TRAINER:
        return "spec.trainer"
    return f"runtime.spec.template.spec.replicatedJobs[{step.name}]"


def _violations(job: Mapping[str, Any], resolved: ResolvedTrainJob, limits: PolicyLimits) -> list[str]:
    out: list[str] = []
    spec = job.get("spec") or {}
    if limits.max_replicas_per_job is not None and resolved.total_pods > limits.max_replicas_per_job:
        out.append(
            f"spec.trainer.numNodes: total pods {resolved.total_pods} exceeds {limits.max_replicas_per_job}"
        )
    if limits.max_total_resources:
        totals: dict[str, Fraction] = {}
        for step in resolved.steps:
            for name, amount in pod_amounts(step.pod_template).items():
                totals[name] = totals.get(name, Fraction(0)) + amount * step.replicas * step.pods
        for name, raw in sorted(limits.max_total_resources.items()):
            total = totals.get(name, Fraction(0))
            if total > parse_quantity(raw):
                shown = format_quantity(total, binary=is_binary(raw))
                out.append(f"spec.trainer.resourcesPerNode: total {name} {shown} exceeds {raw}")
    deadline = spec.get("activeDeadlineSeconds")
    deadline = deadline if isinstance(deadline, int) and not isinstance(deadline, bool) else None
    if limits.max_active_deadline_seconds is not None:
        if deadline is None:
            out.append(f"spec.activeDeadlineSeconds: required, at most {limits.max_active_deadline_seconds}")
        elif deadline > limits.max_active_deadline_seconds:
            out.append(f"spec.activeDeadlineSeconds: {deadline} exceeds {limits.max_active_deadline_seconds}")
    elif limits.require_active_deadline and deadline is None:
        out.append("spec.activeDeadlineSeconds: required")
    if limits.require_ttl and not resolved.ttl_set:
        out.append("runtime.spec.template.spec.ttlSecondsAfterFinished: required")
    if limits.allowed_images is not None:
        allowed = ", ".join(limits.allowed_images) if limits.allowed_images else "(no image is allowed)"
        for step in resolved.steps:
            for kind in ("initContainers", "containers"):
                for index, container in pod_containers(step.pod_template, kind):
                    image = container.get("image")
                    if isinstance(image, str) and image and not image_allowed(image, limits.allowed_images):
                        where = (
                            "spec.trainer.image"
                            if step.ancestor == c.ANCESTOR_TRAINER and container.get("name") == c.NODE
                            else f"{step_path(step)}.template.spec.{kind}[{index}].image"
                        )
                        out.append(
                            f"{where}: {QUOTE.encode(normalize_image(image))} is not allowed: must match one "
                            f"of {allowed}"
                        )
    labels = (job.get("metadata") or {}).get("labels") or {}
    for key in limits.required_labels or []:
        if key not in labels:
            out.append(f"metadata.labels[{key}]: required label is missing")
    if limits.pod_security is not None:
        for step in resolved.steps:
            out += [
                str(e) for e in pod_security_errors(step.pod_template, limits.pod_security, step_path(step))
            ]
    if limits.require_gang_scheduling and not resolved.pod_group_policy:
        out.append("runtime.spec.podGroupPolicy: gang scheduling required")
    return out


def check_trainjob_policies(
    job: Mapping[str, Any], resolved: ResolvedTrainJob, policies: Iterable[TrainingPolicy]
) -> PolicyVerdict:
    """Every limit of every policy (already matched to the TrainJob's kind and namespace)."""
    denials: list[str] = []
    warnings: list[str] = []
    for policy in sorted(select_by_job_labels(policies, job), key=lambda p: p.name):
        if policy.spec.limits is None:
            continue
        lines = [f'policy "{policy.name}": {line}' for line in _violations(job, resolved, policy.spec.limits)]
        if policy.spec.effective_enforcement() == "Warn":
            warnings += lines
        else:
            denials += lines
    return PolicyVerdict(denials=denials, warnings=warnings)


_TRAINJOB_FIELDS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("spec", "runPolicy", "activeDeadlineSeconds"): ("spec", "activeDeadlineSeconds"),
    ("spec", "runPolicy", "suspend"): ("spec", "suspend"),
}


def _trainjob_place(path: tuple[str, ...], value: Any) -> tuple[str, ...] | None:
    if path[:2] == ("metadata", "labels"):
        return path
    if path == ("spec", "runPolicy", "managedBy"):
        return ("spec", "managedBy") if value in c.MANAGERS and value != c.TRAINJOB_CONTROLLER else None
    return _TRAINJOB_FIELDS.get(path)


def apply_trainjob_defaults(
    job: dict[str, Any], policies: Iterable[TrainingPolicy], *, user_job: dict[str, Any]
) -> PolicyDefaulted:
    """The TrainingPolicy defaults of a TrainJob CREATE (`user_job`: as submitted)."""
    return apply_policy_defaults(job, policies, user_job=user_job, place=_trainjob_place)
