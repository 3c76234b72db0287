"""`spec.runtimePatches` and the trainer/initializer overrides applied to a copy of the runtime's
JobSet template, as Trainer 2.3 merges them (server-side-apply semantics of its apply
configurations: maps merged key by key, lists of named items merged by name, other values
replaced). Pure: wire dicts in, wire dicts out, every problem a FieldError."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid
from kubetrain.api.trainer import constants as c

Obj = dict[str, Any]


def upsert_env(container: Obj, env: Sequence[Mapping[str, Any]]) -> None:
    """Set each variable of `env` on `container`: replace one of the same name in place, else append."""
    current: list[Any] = list(container.get("env") or [])
    index = {e.get("name"): i for i, e in enumerate(current) if isinstance(e, Mapping)}
    for var in env:
        name = var.get("name")
        if name in index:
            current[index[name]] = dict(var)
        else:
            index[name] = len(current)
            current.append(dict(var))
    container["env"] = current


def merge_named(
    current: list[Any], items: Sequence[Mapping[str, Any]], key: str = "name", *, replace: bool = False
) -> list[Any]:
    """A list map merged by `key`: an item of the same key merged with the new one (its fields
    set over the old), or with `replace` replaced whole (Trainer's `apply.Upsert*`); new ones
    appended."""
    out = list(current)
    index = {c.get(key): i for i, c in enumerate(out) if isinstance(c, Mapping)}
    for item in items:
        k = item.get(key)
        if k in index:
            out[index[k]] = dict(item) if replace else {**out[index[k]], **item}
        else:
            index[k] = len(out)
            out.append(dict(item))
    return out


def merge_struct(base: object, patch: object) -> Any:
    """A strategic merge patch of a struct without list merge keys (a securityContext, an
    affinity): objects merged field by field, recursively (a null removes the field), anything
    else — lists included — replaced."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(base) if isinstance(base, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_struct(out.get(key), value)
    return out


def merge_list_map(
    current: Sequence[Any],
    items: Sequence[Mapping[str, Any]],
    key: str = "name",
    *,
    replace: bool = False,
    retain_keys: bool = False,
) -> list[Any]:
    """A runtime patch's list map merged into the runtime's, in the order Kubernetes' strategic
    merge patch (which Trainer 2.3 applies runtime patches with) leaves it: the patch's items in
    the patch's order — one the runtime has merged with it (its fields over the old; `replace`:
    the patch's alone; `retain_keys`: only the patch's fields, merged) —, and each item only the
    runtime has inserted before the first patch item the runtime has after it (apimachinery's
    mergeSortedSlice)."""
    original = [x for x in current if isinstance(x, Mapping)]
    where = {x.get(key): i for i, x in enumerate(original)}
    patched = {item.get(key) for item in items}

    def merged(item: Mapping[str, Any]) -> Obj:
        if replace or item.get(key) not in where:
            return dict(item)
        before = original[where[item.get(key)]]
        if retain_keys:  # `retainKeys` (a volume): only the patch's fields, each merged
            return {k: merge_struct(before.get(k), v) for k, v in item.items()}
        return {**before, **item}

    right = [merged(item) for item in items]
    left = [dict(x) for x in original if x.get(key) not in patched]
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
        elif i >= len(left):
            out.append(right[j])
            j += 1
        else:
            li, ri = where.get(left[i].get(key), -1), where.get(right[j].get(key), -1)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def merge_resources(base: Mapping[str, Any] | None, override: Mapping[str, Any]) -> Obj:
    """`resourcesPerNode` over the runtime's `resources`, as Trainer 2.3's
    MergeResourceRequirements (a strategic merge patch): `limits` and `requests` merged resource
    by resource (the TrainJob's quantity wins; a null removes the resource), `claims` merged by
    name; a resource the TrainJob does not name keeps the runtime's quantity."""
    out: Obj = merge_struct(base or {}, {k: v for k, v in override.items() if k != "claims"})
    if override.get("claims") is not None:
        out["claims"] = merge_named(list(out.get("claims") or []), override["claims"])
    return out


def trainer_node_containers(jobset_spec: Mapping[str, Any], by_name: bool = False) -> list[Mapping[str, Any]]:
    """The `node` containers of the replicated jobs labelled as the trainer ancestor (`by_name`:
    or named `node`, as Trainer's ExtractResourcePerNodeFromRuntime also takes)."""
    out: list[Mapping[str, Any]] = []
    for rjob in jobset_spec.get("replicatedJobs") or []:
        template = (rjob or {}).get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        named = by_name and (rjob or {}).get("name") == c.NODE
        if labels.get(c.LABEL_ANCESTOR) != c.ANCESTOR_TRAINER and not named:
            continue
        pod_spec = ((template.get("spec") or {}).get("template") or {}).get("spec") or {}
        out += [
            x for x in pod_spec.get("containers") or [] if isinstance(x, Mapping) and x.get("name") == c.NODE
        ]
    return out


def runtime_resources(jobset_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """Trainer's ExtractResourcePerNodeFromRuntime: the `resources` of the first `node` container
    (of a replicated job named `node` or labelled as the trainer ancestor) that has any; {} if none."""
    nodes = trainer_node_containers(jobset_spec, by_name=True)
    return next((x["resources"] for x in nodes if x.get("resources") is not None), {})


def counted_resources(trainer: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """What the ML policies count GPUs and CPUs per node in: the resources the `node` container
    gets — the TrainJob's `resourcesPerNode` merged over the runtime's (`merge_resources`).
    (Trainer 2.3's plug-ins read `resourcesPerNode` alone when set, so GPUs only the runtime
    declares went uncounted while the pods still got them: Kubeflow Trainer pull request 3974.)"""
    per_node = trainer.get("resourcesPerNode")
    if per_node is None:
        return runtime or {}
    return merge_resources(runtime, per_node)


def merge_metadata(target: Obj, patch: Mapping[str, Any] | None) -> None:
    """Labels and annotations of `patch` merged into `target['metadata']`."""
    if not patch:
        return
    meta = target.setdefault("metadata", {})
    for field in ("labels", "annotations"):
        extra = patch.get(field)
        if isinstance(extra, Mapping) and extra:
            meta[field] = {**(meta.get(field) or {}), **extra}


def apply_runtime_patches(template: Obj, patches: Sequence[Mapping[str, Any]], path: str) -> list[FieldError]:
    """Apply `spec.runtimePatches` in order to the JobSet template (a copy, changed in place)."""
    errors: list[FieldError] = []
    rjobs = {r.get("name"): r for r in ((template.get("spec") or {}).get("replicatedJobs") or [])}
    for i, patch in enumerate(patches):
        ppath = f"{path}[{i}].trainingRuntimeSpec.template"
        tpatch = (patch.get("trainingRuntimeSpec") or {}).get("template") or {}
        merge_metadata(template, tpatch.get("metadata"))
        for j, rpatch in enumerate((tpatch.get("spec") or {}).get("replicatedJobs") or []):
            rpath = f"{ppath}.spec.replicatedJobs[{j}]"
            name = rpatch.get("name")
            rjob = rjobs.get(name)
            if rjob is None:
                have = ", ".join(map(str, rjobs))
                errors.append(
                    invalid(
                        f"{rpath}.name",
                        f"the runtime has no replicated job {QUOTE.encode(name)} (it has: {have})",
                    )
                )
                continue
            job_patch = rpatch.get("template") or {}
            job_template = rjob.setdefault("template", {})
            merge_metadata(job_template, job_patch.get("metadata"))
            pod_patch = (job_patch.get("spec") or {}).get("template") or {}
            pod_template = job_template.setdefault("spec", {}).setdefault("template", {})
            merge_metadata(pod_template, pod_patch.get("metadata"))
            errors += _patch_pod_spec(
                pod_template.setdefault("spec", {}),
                pod_patch.get("spec") or {},
                f"{rpath}.template.spec.template.spec",
            )
    return errors


def _patch_pod_spec(spec: Obj, patch: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for field in ("serviceAccountName", "terminationGracePeriodSeconds"):
        if patch.get(field) is not None:
            spec[field] = patch[field]
    for field in ("securityContext", "affinity"):
        if patch.get(field) is not None:
            spec[field] = merge_struct(spec.get(field), patch[field])
    if patch.get("nodeSelector"):
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **patch["nodeSelector"]}
    if patch.get("volumes"):
        spec["volumes"] = merge_list_map(spec.get("volumes") or [], patch["volumes"], retain_keys=True)
    if patch.get("imagePullSecrets"):
        spec["imagePullSecrets"] = merge_list_map(
            spec.get("imagePullSecrets") or [], patch["imagePullSecrets"]
        )
    if patch.get("schedulingGates"):
        spec["schedulingGates"] = merge_list_map(spec.get("schedulingGates") or [], patch["schedulingGates"])
    if patch.get("tolerations"):
        spec["tolerations"] = [*(spec.get("tolerations") or []), *patch["tolerations"]]
    for field in ("initContainers", "containers"):
        containers = spec.get(field) or []
        by_name = {c.get("name"): c for c in containers if isinstance(c, dict)}
        for k, cpatch in enumerate(patch.get(field) or []):
            name = cpatch.get("name")
            container = by_name.get(name)
            if container is None:
                have = ", ".join(map(str, by_name)) or "none"
                errors.append(
                    invalid(
                        f"{path}.{field}[{k}].name",
                        f"the replicated job has no {field[:-1]} {QUOTE.encode(name)} (it has: {have})",
                    )
                )
                continue
            if cpatch.get("env"):
                container["env"] = merge_list_map(container.get("env") or [], cpatch["env"], replace=True)
            if cpatch.get("volumeMounts"):
                container["volumeMounts"] = merge_list_map(
                    container.get("volumeMounts") or [], cpatch["volumeMounts"], key="mountPath"
                )
            if cpatch.get("securityContext") is not None:
                container["securityContext"] = merge_struct(
                    container.get("securityContext"), cpatch["securityContext"]
                )
    return errors
