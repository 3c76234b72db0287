"""Platform limits: check a (defaulted) job against the matching TrainingPolicies.

Every limit of every matching policy applies. Each violation is one line of the form
`policy "<name>": <field path>: <what exceeds which limit>`, e.g.
`policy "gpu-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 48 exceeds 32`.
A policy with `enforcement: Deny` (the default) turns its lines into denials; `Warn` turns them
into admission warnings and the job is admitted.

Limits (docs/behaviour.md §9):
- `maxReplicasPerJob`: total pods (elastic PyTorch Workers count at `maxReplicas`).
- `maxTotalResources`: per resource name, the sum over replica types of replicas x the pod's
  effective resources (containers' requests, or limits where a container has no request; init
  containers as the scheduler counts them). The path names the replica type when only one
  replica type uses the resource, else the replica map.
- `maxActiveDeadlineSeconds`: `activeDeadlineSeconds` must be set and at most the limit (a job
  without a deadline would run longer than any maximum).
- `requireActiveDeadline`, `requireTTL`: `activeDeadlineSeconds` / `ttlSecondsAfterFinished` set.
- `allowedImages`: every container and init container image matches one glob (see `images`).
- `requiredLabels`: the job's `metadata.labels` carry every listed key.
- `requireGangScheduling`: the job has `runPolicy.schedulingPolicy.minAvailable` (set by the
  built-in defaulting when the operator runs a gang scheduler), and, when the caller says the
  operator runs without one (`gang_scheduling=False`), the job is refused with that reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.podresources import pod_amounts, pod_containers
from kubetrain.api.policy import PolicyLimits, TrainingPolicy
from kubetrain.api.quantity import format_quantity, is_binary, parse_quantity
from kubetrain.policy.images import image_allowed, normalize_image
from kubetrain.policy.matching import select_by_job_labels
from kubetrain.policy.podsecurity import job_pod_security_errors
from kubetrain.policy.resources import replica_groups, replica_map_path


@dataclass(frozen=True)
class PolicyVerdict:
    denials: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.denials


def _run_policy(job: dict[str, Any]) -> dict[str, Any]:
    spec = job.get("spec")
    run_policy = spec.get("runPolicy") if isinstance(spec, dict) else None
    return run_policy if isinstance(run_policy, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _replica_violations(job: dict[str, Any], limit: int) -> list[str]:
    total = sum(g.replicas for g in replica_groups(job))
    if total > limit:
        return [f"{replica_map_path(job)}: total replicas {total} exceeds {limit}"]
    return []


def _resource_violations(job: dict[str, Any], limits: dict[str, Any]) -> list[str]:
    totals: dict[str, Fraction] = {}
    users: dict[str, list[str]] = {}
    for group in replica_groups(job):
        if group.replicas == 0:
            continue
        for name, amount in pod_amounts(group.template).items():
            if amount == 0:
                continue
            totals[name] = totals.get(name, Fraction(0)) + amount * group.replicas
            users.setdefault(name, []).append(group.path)
    out: list[str] = []
    for name, raw_limit in sorted(limits.items()):
        limit = parse_quantity(raw_limit)
        total = totals.get(name, Fraction(0))
        if total > limit:
            paths = users[name]
            path = paths[0] if len(paths) == 1 else replica_map_path(job)
            shown = format_quantity(total, binary=is_binary(raw_limit))
            out.append(f"{path}: total {name} {shown} exceeds {raw_limit}")
    return out


def _image_violations(job: dict[str, Any], globs: list[str]) -> list[str]:
    out: list[str] = []
    allowed = ", ".join(globs) if globs else "(no image is allowed)"
    for group in replica_groups(job):
        for kind in ("initContainers", "containers"):
            for index, container in pod_containers(group.template, kind):
                image = container.get("image")
                if not isinstance(image, str) or not image:
                    continue  # the job validation requires an image
                if not image_allowed(image, globs):
                    out.append(
                        f"{group.path}.template.spec.{kind}[{index}].image: "
                        f"{QUOTE.encode(normalize_image(image))} is not allowed: must match one of {allowed}"
                    )
    return out


def _violations(job: dict[str, Any], limits: PolicyLimits, gang_scheduling: bool | None) -> list[str]:
    out: list[str] = []
    run_policy = _run_policy(job)
    if limits.max_replicas_per_job is not None:
        out += _replica_violations(job, limits.max_replicas_per_job)
    if limits.max_total_resources:
        out += _resource_violations(job, limits.max_total_resources)
    deadline = _int(run_policy.get("activeDeadlineSeconds"))
    deadline_path = "spec.runPolicy.activeDeadlineSeconds"
    if limits.max_active_deadline_seconds is not None:
        if deadline is None:
            out.append(f"{deadline_path}: required, at most {limits.max_active_deadline_seconds}")
        elif deadline > limits.max_active_deadline_seconds:
            out.append(f"{deadline_path}: {deadline} exceeds {limits.max_active_deadline_seconds}")
    elif limits.require_active_deadline and deadline is None:
        out.append(f"{deadline_path}: required")
    if limits.require_ttl and _int(run_policy.get("ttlSecondsAfterFinished")) is None:
        out.append("spec.runPolicy.ttlSecondsAfterFinished: required")
    if limits.allowed_images is not None:
        out += _image_violations(job, limits.allowed_images)
    if limits.required_labels:
        metadata = job.get("metadata")
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        present = labels if isinstance(labels, dict) else {}
        for key in limits.required_labels:
            if key not in present:
                out.append(f"metadata.labels[{key}]: required label is missing")
    if limits.pod_security is not None:
        out += [str(e) for e in job_pod_security_errors(job, limits.pod_security)]
    if limits.require_gang_scheduling:
        scheduling = run_policy.get("schedulingPolicy")
        min_available = _int(scheduling.get("minAvailable")) if isinstance(scheduling, dict) else None
        if gang_scheduling is False:
            out.append(
                "spec.runPolicy.schedulingPolicy: gang scheduling required, "
                "but the operator runs without a gang scheduler"
            )
        elif min_available is None:
            out.append("spec.runPolicy.schedulingPolicy.minAvailable: required (gang scheduling)")
    return out


def check_policy_limits(
    job: dict[str, Any],
    policies: Iterable[TrainingPolicy],
    *,
    gang_scheduling: bool | None = None,
) -> PolicyVerdict:
    """Check `job` (already defaulted) against `policies` (already matched to it).

    `gang_scheduling` says whether the operator runs a gang scheduler (None: unknown, e.g.
    offline validation; only the job itself is checked then).
    """
    denials: list[str] = []
    warnings: list[str] = []
    for policy in sorted(select_by_job_labels(policies, job), key=lambda p: p.name):
        if policy.spec.limits is None:
            continue
        lines = [
            f'policy "{policy.name}": {line}'
            for line in _violations(job, policy.spec.limits, gang_scheduling)
        ]
        if policy.spec.effective_enforcement() == "Warn":
            warnings += lines
        else:
            denials += lines
    return PolicyVerdict(denials=denials, warnings=warnings)
