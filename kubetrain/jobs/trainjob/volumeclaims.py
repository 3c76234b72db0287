"""JobSet's `volumeClaimPolicies` (kubernetes-sigs/jobset v0.12) for a TrainJob: the
PersistentVolumeClaims its runtime's JobSet template asks for, shared by the replicated jobs.

- Validation, as JobSet's webhook and its CRD (`validate`, for a runtime): at most 50 policies
  and 50 templates each; each template named — a DNS-1123 subdomain, unique over all policies —
  and without `metadata.namespace`; `retentionPolicy.whenDeleted` Delete or Retain (default
  Delete, applied on read: the runtime is never changed); each template mounted (a
  `volumeMounts[].name` equal to its name) by a container or init container of at least one
  replicated job, and no replicated job has a volume of that name.
- For a TrainJob (`resolve`; JobSet's name is the TrainJob's): the PVC `<template>-<tj>` must
  stay within JobSet's 63 characters; every pod template that mounts a template by name gets the
  volume `{name: <template>, persistentVolumeClaim: {claimName: <template>-<tj>}}` (JobSet's
  `addVolumes`), and the claims to create are `VolumeClaim`s.
- The PVC objects (`objects`): name `<template>-<tj>`, the template's labels plus
  `jobset.sigs.k8s.io/jobset-name: <tj>` (and the labels kubetrain gives every child of the
  TrainJob), its annotations, its spec as is, and the TrainJob as controller owner only when
  `whenDeleted` is Delete (Retain: no ownerReference, the PVC outlives the TrainJob).

Pure."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.dnsnames import is_dns1123_subdomain
from kubetrain.api.errors import QUOTE, FieldError, duplicate, forbidden, invalid, not_supported, required
from kubetrain.api.trainer import constants as c

Obj = dict[str, Any]
FIELD = "volumeClaimPolicies"
DELETE, RETAIN = "Delete", "Retain"
RETENTION_POLICIES = (DELETE, RETAIN)
MAX_ITEMS = 50  # JobSet's CRD: MaxItems of volumeClaimPolicies and of each policy's templates
MAX_CLAIM_NAME = 63  # JobSet's webhook: maxVolumeClaimLength


@dataclass(frozen=True)
class VolumeClaim:
    """One PVC a TrainJob's pods share: `template` is the volume name, `name` the PVC's."""

    template: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict)
    delete: bool = True  # retentionPolicy.whenDeleted Delete: owned by the TrainJob


def claim_name(trainjob: str, template: str) -> str:
    """JobSet's GeneratePVCName: `<template>-<jobset>`."""
    return f"{template}-{trainjob}"


def when_deleted(policy: Mapping[str, Any]) -> object:
    """`retentionPolicy.whenDeleted`, with JobSet's webhook default (Delete)."""
    retention = policy.get("retentionPolicy")
    value = retention.get("whenDeleted") if isinstance(retention, Mapping) else None
    return DELETE if value is None else value


def _policies(jsspec: Mapping[str, Any]) -> list[Any]:
    policies = jsspec.get(FIELD)
    return policies if isinstance(policies, list) else []


def _templates(policy: object) -> list[Any]:
    templates = policy.get("templates") if isinstance(policy, Mapping) else None
    return templates if isinstance(templates, list) else []


def _meta(template: object) -> Mapping[str, Any]:
    meta = template.get("metadata") if isinstance(template, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def _pod_spec(rjob: object) -> Mapping[str, Any]:
    spec: object = rjob
    for key in ("template", "spec", "template", "spec"):
        spec = spec.get(key) if isinstance(spec, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def mounts(pod_spec: Mapping[str, Any], name: str) -> bool:
    """Whether a container or init container of the pod mounts volume `name` (JobSet's hasVolumeMount)."""
    for kind in ("containers", "initContainers"):
        for container in pod_spec.get(kind) or []:
            if not isinstance(container, Mapping):
                continue
            if any(
                isinstance(m, Mapping) and m.get("name") == name for m in container.get("volumeMounts") or []
            ):
                return True
    return False


def validate(jsspec: Mapping[str, Any], path: str) -> list[FieldError]:
    """Every problem of the volumeClaimPolicies of a JobSet template spec at `path`."""
    errors: list[FieldError] = []
    policies = _policies(jsspec)
    base = f"{path}.{FIELD}"
    if len(policies) > MAX_ITEMS:
        errors.append(invalid(base, f"must have at most {MAX_ITEMS} items, not {len(policies)}"))
    rjobs = [r for r in jsspec.get("replicatedJobs") or [] if isinstance(r, Mapping)]
    seen: set[str] = set()
    for i, policy in enumerate(policies):
        where = f"{base}[{i}]"
        value = when_deleted(policy) if isinstance(policy, Mapping) else DELETE
        if value not in RETENTION_POLICIES:
            errors.append(not_supported(f"{where}.retentionPolicy.whenDeleted", value, RETENTION_POLICIES))
        templates = _templates(policy)
        if len(templates) > MAX_ITEMS:
            errors.append(
                invalid(f"{where}.templates", f"must have at most {MAX_ITEMS} items, not {len(templates)}")
            )
        for j, template in enumerate(templates):
            errors += _template(template, f"{where}.templates[{j}]", seen, rjobs, path)
    return errors


def _template(
    template: object, where: str, seen: set[str], rjobs: list[Mapping[str, Any]], path: str
) -> list[FieldError]:
    meta = _meta(template)
    name = meta.get("name")
    errors: list[FieldError] = []
    if meta.get("namespace"):
        message = "must not be set: the PVC is made in the TrainJob's namespace"
        errors.append(forbidden(f"{where}.metadata.namespace", message))
    if not isinstance(name, str) or not name:
        return [
            *errors,
            required(f"{where}.metadata.name", "the claim's name: the volume name pods mount it by"),
        ]
    if name in seen:
        errors.append(
            duplicate(
                f"{where}.metadata.name", f"{QUOTE.encode(name)}: names must be unique over all templates"
            )
        )
    seen.add(name)
    if not is_dns1123_subdomain(name):
        errors.append(
            invalid(
                f"{where}.metadata.name",
                f"{QUOTE.encode(name)} must be a lowercase RFC 1123 subdomain (lower case alphanumerics, '-' "
                "or '.', "
                "starting and ending with an alphanumeric)",
            )
        )
    for i, rjob in enumerate(rjobs):
        for k, volume in enumerate(_pod_spec(rjob).get("volumes") or []):
            if isinstance(volume, Mapping) and volume.get("name") == name:
                errors.append(
                    invalid(
                        f"{path}.replicatedJobs[{i}].template.spec.template.spec.volumes[{k}].name",
                        f"{QUOTE.encode(name)} conflicts with the volumeClaimPolicies template of that name "
                        "(its volume is added to every pod that mounts it)",
                    )
                )
    if not any(mounts(_pod_spec(rjob), name) for rjob in rjobs):
        errors.append(
            invalid(
                f"{path}.replicatedJobs",
                "no container or init container of a replicated job has a volumeMount named "
                f"{QUOTE.encode(name)} "
                f"(the volumeClaimPolicies template at {where})",
            )
        )
    return errors


def resolve(
    jsspec: Mapping[str, Any], trainjob: str, pod_templates: Iterable[Mapping[str, Any]]
) -> tuple[tuple[VolumeClaim, ...], list[FieldError]]:
    """The claims of TrainJob `trainjob` run from the (patched) template spec `jsspec`, their
    volumes added to the spec of each of `pod_templates` that mounts one (changed in place);
    every problem (template paths under `runtime.spec.template.spec`)."""
    errors = validate(jsspec, "runtime.spec.template.spec")
    claims: list[VolumeClaim] = []
    for i, policy in enumerate(_policies(jsspec)):
        delete = when_deleted(policy) == DELETE if isinstance(policy, Mapping) else True
        for j, template in enumerate(_templates(policy)):
            meta = _meta(template)
            name = meta.get("name")
            if not isinstance(name, str) or not name:
                continue
            pvc = claim_name(trainjob, name)
            if len(pvc) > MAX_CLAIM_NAME:
                errors.append(
                    invalid(
                        "metadata.name",
                        f"the PersistentVolumeClaim {QUOTE.encode(pvc)} of "
                        f"runtime.spec.template.spec.{FIELD}[{i}]"
                        f".templates[{j}] would be {len(pvc)} characters, more than {MAX_CLAIM_NAME}: "
                        f"use a TrainJob name of at most {MAX_CLAIM_NAME - len(name) - 1} characters",
                    )
                )
            spec = template.get("spec") if isinstance(template, Mapping) else None
            claims.append(
                VolumeClaim(
                    template=name,
                    name=pvc,
                    labels=dict(meta.get("labels") or {}),
                    annotations=dict(meta.get("annotations") or {}),
                    spec=copy.deepcopy(dict(spec)) if isinstance(spec, Mapping) else {},
                    delete=delete,
                )
            )
    for template in pod_templates:
        pod_spec = template.get("spec")
        if isinstance(pod_spec, dict):
            add_volumes(pod_spec, claims)
    return tuple(claims), errors


def add_volumes(pod_spec: Obj, claims: Iterable[VolumeClaim]) -> None:
    """JobSet's addVolumes: a volume for each claim the pod mounts by name, appended."""
    for claim in claims:
        if mounts(pod_spec, claim.template):
            volume = {"name": claim.template, "persistentVolumeClaim": {"claimName": claim.name}}
            pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), volume]


def objects(
    claims: Iterable[VolumeClaim],
    trainjob: str,
    namespace: str,
    owner: Mapping[str, Any],
    labels: Mapping[str, str],
) -> list[Obj]:
    """The PVCs to create: JobSet's labels and annotations plus `labels`, `owner` as controller
    ownerReference of those whose retention policy is Delete."""
    out: list[Obj] = []
    for claim in claims:
        meta: Obj = {
            "name": claim.name,
            "namespace": namespace,
            "labels": {**claim.labels, c.JOBSET_NAME: trainjob, **labels},
        }
        if claim.annotations:
            meta["annotations"] = dict(claim.annotations)
        if claim.delete:
            meta["ownerReferences"] = [dict(owner)]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": meta,
                "spec": copy.deepcopy(dict(claim.spec)),
            }
        )
    return out
