"""Trainer 2.3's TrainJob field rules beyond `validate.py`'s: what its CRD markers hold (Trainer
answers those 422 Invalid before its webhook runs) and what its JobSet plug-in's validation and
its defaulting webhook add (docs/behaviour.md, "Admission"):

- `spec.initializer.{dataset,model}.storageUri`: empty, or `scheme://…` (the CRD's CEL rule and
  its message), at most 2048 characters;
- `spec.trainer.command` / `args`: at most 128 items of at most 1 MiB (1048576 characters) each;
  `spec.trainer.image` at most 500 characters;
- no variable named twice in one env list (`spec.trainer.env`, `spec.initializer.*.env`, a patch's
  containers' and init containers' `env`: the CRD's list keys, `x-kubernetes-list-type: map`);
- `spec.runtimePatches[i].manager`: a domain-prefixed path (`acme.io/foo`), as Trainer's
  `validation.IsDomainPrefixedPath`; a pod spec patch's `terminationGracePeriodSeconds` ≥ 0;
  no `env` for the `node`, `dataset-initializer`, `model-initializer` containers (init
  containers and other containers may have it);
- an initializer the TrainJob configures needs the runtime's replicated job of that name with a
  container (or init container) of that name (`spec.runtimeRef`, Trainer's messages);
- on update: `runtimePatches` change only while the TrainJob is suspended before or after the
  update, and a patch's `serviceAccountName`, `volumes`, `initContainers`, `containers`,
  `imagePullSecrets`, `securityContext`, `terminationGracePeriodSeconds` — of a manager and
  replicated job the stored TrainJob already patches, set in both — never change (CEL
  `self == oldSelf`; list maps compared by key, in any order); and a change is refused while
  the stored TrainJob's `status.jobsStatus` counts a replicated job's jobs active (Trainer reads
  its JobSet's status: `active_job_errors`);
- `default_patch_times`: each patch's `time`, as Trainer's defaulter sets it.

Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubetrain.api.dnsnames import MAX_SUBDOMAIN_LENGTH, is_dns1123_subdomain
from kubetrain.api.errors import QUOTE, FieldError, duplicate, forbidden, invalid, json_int
from kubetrain.api.trainer import constants as c

Obj = dict[str, Any]
STORAGE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://.+")
STORAGE_URI_MESSAGE = "storageUri may be empty, or it must be a valid URI (scheme://...)"
MAX_STORAGE_URI = 2048
MAX_ITEMS = 128
MAX_ITEM_LENGTH = 1048576
MAX_IMAGE = 500
HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")
# PodSpecPatch fields Trainer's CRD makes immutable (`self == oldSelf`), and the key of each list map.
IMMUTABLE_POD_FIELDS: dict[str, str | None] = {
    "serviceAccountName": None,
    "volumes": "name",
    "initContainers": "name",
    "containers": "name",
    "imagePullSecrets": "name",
    "securityContext": None,
    "terminationGracePeriodSeconds": None,
}
POD_SPEC = "template.spec.template.spec"
# Containers whose env the TrainJob's own fields set: a runtime patch may not (Trainer's rule).
OWN_ENV = (c.DATASET_INITIALIZER, c.MODEL_INITIALIZER, c.NODE)


def _rjob_patches(patch: Mapping[str, Any]) -> list[Any]:
    spec = (((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")) or {}
    rjobs = spec.get("replicatedJobs") if isinstance(spec, Mapping) else None
    return rjobs if isinstance(rjobs, list) else []


def _pod_spec(rjob_patch: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = (((rjob_patch.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _patches(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p for p in spec.get("runtimePatches") or [] if isinstance(p, Mapping)]


def _manager_errors(manager: object, path: str) -> list[FieldError]:
    """Kubernetes' IsDomainPrefixedPath."""
    if not manager:
        return []  # validate.py asks for it
    text = str(manager)
    host, _, rest = text.partition("/")
    if not host or not rest:
        return [invalid(path, f'{QUOTE.encode(text)} must be a domain-prefixed path (such as "acme.io/foo")')]
    errors: list[FieldError] = []
    if not is_dns1123_subdomain(host):
        errors.append(
            invalid(
                path,
                f"{QUOTE.encode(host)} must be a lowercase RFC 1123 subdomain "
                f"of at most {MAX_SUBDOMAIN_LENGTH} characters",
            )
        )
    if not HTTP_PATH.fullmatch(rest):
        errors.append(
            invalid(path, f"{QUOTE.encode(rest)}: Invalid path: must match the regex {HTTP_PATH.pattern}")
        )
    return errors


def field_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """The CRD's and Trainer's per-field rules of a TrainJob spec."""
    errors: list[FieldError] = []
    initializer = spec.get("initializer") or {}
    for source in ("dataset", "model"):
        uri = (initializer.get(source) or {}).get("storageUri")
        path = f"spec.initializer.{source}.storageUri"
        if uri is None:
            continue
        if not isinstance(uri, str) or (uri and not STORAGE_URI.fullmatch(uri)):
            errors.append(invalid(path, f"{QUOTE.encode(uri)}: {STORAGE_URI_MESSAGE}"))
        elif len(uri) > MAX_STORAGE_URI:
            errors.append(invalid(path, f"must be at most {MAX_STORAGE_URI} characters, not {len(uri)}"))
    trainer = spec.get("trainer") or {}
    for key in ("command", "args"):
        items = trainer.get(key)
        if not isinstance(items, list):
            continue
        if len(items) > MAX_ITEMS:
            errors.append(
                invalid(f"spec.trainer.{key}", f"must have at most {MAX_ITEMS} items, not {len(items)}")
            )
        for i, item in enumerate(items):
            if isinstance(item, str) and len(item) > MAX_ITEM_LENGTH:
                errors.append(
                    invalid(
                        f"spec.trainer.{key}[{i}]",
                        f"must be at most {MAX_ITEM_LENGTH} characters, not {len(item)}",
                    )
                )
    errors += _env_duplicates(trainer.get("env"), "spec.trainer.env")
    for source in ("dataset", "model"):
        errors += _env_duplicates(
            (initializer.get(source) or {}).get("env"), f"spec.initializer.{source}.env"
        )
    image = trainer.get("image")
    if isinstance(image, str) and len(image) > MAX_IMAGE:
        errors.append(
            invalid("spec.trainer.image", f"must be at most {MAX_IMAGE} characters, not {len(image)}")
        )
    for i, patch in enumerate(spec.get("runtimePatches") or []):
        if not isinstance(patch, Mapping):
            continue
        errors += _manager_errors(patch.get("manager"), f"spec.runtimePatches[{i}].manager")
        for j, rjob in enumerate(_rjob_patches(patch)):
            pod_spec = _pod_spec(rjob) if isinstance(rjob, Mapping) else {}
            rpath = (
                f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}].{POD_SPEC}"
            )
            for kind in ("containers", "initContainers"):
                for k, cpatch in enumerate(pod_spec.get(kind) or []):
                    if isinstance(cpatch, Mapping):
                        errors += _env_duplicates(cpatch.get("env"), f"{rpath}.{kind}[{k}].env")
            for k, cpatch in enumerate(pod_spec.get("containers") or []):
                if isinstance(cpatch, Mapping) and cpatch.get("name") in OWN_ENV and cpatch.get("env"):
                    errors.append(
                        invalid(
                            f"{rpath}.containers[{k}].env",
                            f"must not have envs for the {', '.join(OWN_ENV)} containers "
                            "(set them in spec.trainer.env or spec.initializer.<dataset|model>.env)",
                        )
                    )
            grace = pod_spec.get("terminationGracePeriodSeconds")
            if grace is not None and (json_int(grace) is None or grace < 0):
                path = (
                    f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}]."
                    f"{POD_SPEC}.terminationGracePeriodSeconds"
                )
                errors.append(invalid(path, f"must be greater than or equal to 0, not {QUOTE.encode(grace)}"))
    return errors


def _env_duplicates(env: object, path: str) -> list[FieldError]:
    """A variable named twice in one env list: Trainer's CRD keys these lists by `name`
    (`x-kubernetes-list-type: map`), so its API server refuses the second one."""
    seen: set[object] = set()
    errors: list[FieldError] = []
    for i, var in enumerate(env if isinstance(env, list) else []):
        name = var.get("name") if isinstance(var, Mapping) else None
        if isinstance(name, str) and name in seen:
            errors.append(
                duplicate(f"{path}[{i}].name", f"{QUOTE.encode(name)}: another variable has this name")
            )
        seen.add(name)
    return errors


def initializer_errors(spec: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    """Trainer's JobSet plug-in: an initializer the TrainJob configures needs its step in the runtime."""
    errors: list[FieldError] = []
    initializer = spec.get("initializer") or {}
    rjobs = (((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "replicatedJobs"
    ) or []
    names: dict[str, set[str]] = {}
    for rjob in rjobs:
        if not isinstance(rjob, Mapping):
            continue
        pod = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        containers = [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
        names[str(rjob.get("name"))] = {str(x.get("name")) for x in containers if isinstance(x, Mapping)}
    for source, step, config in (
        ("dataset", c.DATASET_INITIALIZER, "datasetConfig"),
        ("model", c.MODEL_INITIALIZER, "modelConfig"),
    ):
        if initializer.get(source) is None:
            continue
        if step not in names:
            message = f"must have {step} job when trainJob is configured with input {config}"
            errors.append(invalid("spec.runtimeRef", message))
        elif step not in names[step]:
            errors.append(
                invalid("spec.runtimeRef", f"must have container with name - {step} in the {step} job")
            )
    return errors


def _keyed(value: object, key: str | None) -> object:
    """A list map as a dict by its key (CEL compares list maps in any order)."""
    if key is None or not isinstance(value, list):
        return value
    return {str(x.get(key)) if isinstance(x, Mapping) else repr(x): x for x in value}


def _without_time(patches: Sequence[Mapping[str, Any]]) -> list[Obj]:
    return [{k: v for k, v in p.items() if k != "time"} for p in patches]


def _patches_changed(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> bool:
    """Whether an update changes the runtimePatches (their defaulted `time`s aside)."""
    return _without_time(_patches(spec)) != _without_time(_patches(old_spec))


def _suspended(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> bool:
    """Suspended before or after the update: when runtimePatches may change."""
    return spec.get("suspend") is True or old_spec.get("suspend") is True


def update_errors(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[FieldError]:
    """The runtimePatches rules of an update."""
    errors: list[FieldError] = []
    new, old = _patches(spec), _patches(old_spec)
    if _patches_changed(spec, old_spec) and not _suspended(spec, old_spec):
        errors.append(
            forbidden(
                "spec.runtimePatches",
                "RuntimePatches can only be modified when the TrainJob is suspended "
                "before or after the update",
            )
        )
    old_by_manager = {p.get("manager"): p for p in old}
    for i, patch in enumerate(new):
        before = old_by_manager.get(patch.get("manager"))
        if before is None:
            continue
        old_rjobs = {r.get("name"): r for r in _rjob_patches(before) if isinstance(r, Mapping)}
        for j, rjob in enumerate(_rjob_patches(patch)):
            if not isinstance(rjob, Mapping) or rjob.get("name") not in old_rjobs:
                continue
            now_spec, was_spec = _pod_spec(rjob), _pod_spec(old_rjobs[rjob.get("name")])
            for name, key in IMMUTABLE_POD_FIELDS.items():
                if name not in now_spec or name not in was_spec:
                    continue
                if _keyed(now_spec[name], key) != _keyed(was_spec[name], key):
                    path = (
                        f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}]."
                        f"{POD_SPEC}.{name}"
                    )
                    errors.append(invalid(path, "field is immutable: it may be set or removed, not changed"))
    return errors


def active_job_errors(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """Trainer's JobSet plug-in: a runtimePatches change that `update_errors` lets through (the
    TrainJob suspended before or after the update) is refused while a replicated job of the
    TrainJob still has active jobs, so a patch never reaches pods that still run. Trainer reads
    its JobSet's `replicatedJobsStatus[].active`; kubetrain runs no JobSet and reads the stored
    TrainJob's `status.jobsStatus[].active` — the same counts, which its controller writes from
    the pods (a job is active while a pod of it is Pending or Running; none once a suspend
    deleted them) — one error per replicated job with active jobs, in the status' order. No status yet (never
    reconciled) is Trainer's "no JobSet": allowed. A TrainJob managed by MultiKueue runs
    elsewhere (Trainer finds no JobSet in this cluster): not checked."""
    old_spec = old.get("spec") or {}
    if not _patches_changed(spec, old_spec) or not _suspended(spec, old_spec):
        return []  # unchanged, or a change update_errors refuses
    if (old_spec.get("managedBy") or c.TRAINJOB_CONTROLLER) != c.TRAINJOB_CONTROLLER:
        return []
    status = old.get("status")
    entries = status.get("jobsStatus") if isinstance(status, Mapping) else None
    errors: list[FieldError] = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping) and (json_int(entry.get("active")) or 0) > 0:
            errors.append(
                forbidden(
                    "spec.runtimePatches",
                    "RuntimePatches cannot be modified when the JobSet's ReplicatedJob "
                    f"{entry.get('name')} is still active",
                )
            )
    return errors


def default_patch_times(spec: Obj, old_spec: Mapping[str, Any] | None, now: datetime) -> None:
    """Trainer's defaulter: on create each patch without `time` gets `now`; on update a patch
    equal to the stored one of its manager (but for `time`) keeps that one's time, a changed
    patch gets `now`, a new one without `time` gets `now`."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    old = {p.get("manager"): p for p in _patches(old_spec or {})}
    for patch in spec.get("runtimePatches") or []:
        if not isinstance(patch, dict):
            continue
        before = old.get(patch.get("manager")) if old_spec is not None else None
        if before is None:
            patch.setdefault("time", stamp)
            if patch["time"] is None:
                patch["time"] = stamp
        elif _without_time([before]) == _without_time([patch]):
            if before.get("time") is None:
                patch.pop("time", None)
            else:
                patch["time"] = before["time"]
        else:
            patch["time"] = stamp
