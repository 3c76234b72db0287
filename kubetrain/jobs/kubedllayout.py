"""KubeDL's spec layout (`training.kubedl.io/v1alpha1`) ↔ kubetrain's (`runPolicy`). Pure.

KubeDL's TFJob, PyTorchJob and XGBoostJob inline their run policy in the spec
(`spec.cleanPodPolicy`, `spec.ttlSecondsAfterFinished`, `spec.activeDeadlineSeconds`,
`spec.backoffLimit`, `spec.schedulingPolicy`); its MPIJob has `spec.runPolicy` and, for older
layouts, the same fields inline. A stored KubeDL job keeps KubeDL's layout: defaulting and
validation work on the kubetrain layout `to_v1` gives (inline fields moved into `runPolicy`, a
`runPolicy` of the job winning over inline ones), and the defaults go back inline (`from_v1`),
so what the mutating webhook adds is in KubeDL's places. Differences:

- `schedulingPolicy.priorityClassName` is kubetrain's `priorityClass`; `schedulingPolicy.priority`
  (a number) is refused: use a PriorityClass.
- `cronPolicy` (scheduled training), `modelVersion` (model images built by KubeDL's model
  controller) and `cacheBackend` (Fluid dataset caches) are refused with a message saying so;
  `mainContainer` (KubeDL's MPIJob) is accepted when it names the framework container kubetrain
  runs (MPI: container 0 of each template).
- A field KubeDL names differently (`Framework.kubedl_renamed_field`: MPI's `mpiDistribution`,
  `IntelMPI` → `mpiImplementation: Intel`) is read as kubetrain's; the fields of a kind's older
  KubeDL layouts (`Framework.kubedl_refused_fields`: MPI's v1alpha1 `replicas`, `template`,
  `gpus`, …) and a replica's `spotReplicaSpec` are refused with a message saying what to write.
- Where KubeDL names the framework container differently (`Framework.kubedl_container_name`:
  XGBoost's `xgboostjob`, kubetrain's `xgboost`), the job keeps KubeDL's name and its pods name
  the container as kubetrain does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubetrain.api.common import RunPolicy
from kubetrain.api.errors import QUOTE, FieldError, forbidden, invalid, not_supported
from kubetrain.api.groups import KUBEDL_GROUP
from kubetrain.api.podtemplate import framework_container_index
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.registry import get_framework

SCHEDULING = "schedulingPolicy"
# Every run policy field sits inline in KubeDL's layout: KubeDL's own (cleanPodPolicy,
# ttlSecondsAfterFinished, activeDeadlineSeconds, backoffLimit, schedulingPolicy) and kubetrain's
# further ones (suspend, managedBy, podFailurePolicy), so defaults land next to them.
RUN_POLICY_FIELDS = tuple(
    f.alias or name for name, f in RunPolicy.model_fields.items() if (f.alias or name) != SCHEDULING
)
REFUSED = {
    "cronPolicy": "KubeDL's scheduled training; create a Cron-style schedule for the job instead",
    "modelVersion": "KubeDL's model images are not built by kubetrain; push the model from the "
    "training code or a follow-up job",
    "cacheBackend": "KubeDL's Fluid dataset caches are not managed by kubetrain; mount a "
    "PersistentVolumeClaim of the cache instead",
}

SPOT = "spotReplicaSpec"
SPOT_WHY = (
    "KubeDL's spot replicas are not run by kubetrain (KubeDL's controller does not act on them "
    "either): remove the field, or set priorityClassName and labels in the replica's template"
)


def is_kubedl(obj: Mapping[str, Any]) -> bool:
    """The job's apiVersion is in KubeDL's group (`training.kubedl.io/<version>`)."""
    api_version = obj.get("apiVersion")
    return isinstance(api_version, str) and api_version.startswith(f"{KUBEDL_GROUP}/")


def read_layout(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[FieldError]]:
    """The job in kubetrain's layout and the KubeDL fields kubetrain does not run (each refused
    with why, at the path the user wrote), read in one pass. A job that is not a KubeDL one (or
    has no spec) comes back as it is — the same object, which callers treat as read-only; a
    KubeDL job as a converted copy."""
    spec = obj.get("spec")
    if not is_kubedl(obj) or not isinstance(spec, Mapping):
        return obj, []
    framework = get_framework(str(obj.get("kind")))
    return _converted(obj, framework), _refusals(spec, framework)


def layout_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """KubeDL fields kubetrain does not run, each refused with why."""
    return read_layout(obj)[1]


def _refusals(spec: Mapping[str, Any], framework: Framework | None) -> list[FieldError]:
    errors: list[FieldError] = []
    for key, why in REFUSED.items():
        if spec.get(key) is not None:
            errors.append(forbidden(f"spec.{key}", f"not supported by kubetrain: {why}"))
    for base in ("spec", "spec.runPolicy"):
        holder = spec if base == "spec" else spec.get("runPolicy")
        sched = holder.get(SCHEDULING) if isinstance(holder, Mapping) else None
        if isinstance(sched, Mapping) and sched.get("priority") is not None:
            errors.append(
                forbidden(
                    f"{base}.{SCHEDULING}.priority",
                    "a numeric priority is not supported: name a PriorityClass in priorityClassName",
                )
            )
        if isinstance(holder, Mapping) and base == "spec.runPolicy" and holder.get("cronPolicy") is not None:
            errors.append(
                forbidden("spec.runPolicy.cronPolicy", f"not supported by kubetrain: {REFUSED['cronPolicy']}")
            )
    errors.extend(_renamed_errors(spec, framework))
    for key, _ in framework.kubedl_refused_fields if framework is not None else ():
        if spec.get(key) is not None:
            errors.append(forbidden(f"spec.{key}", framework.kubedl_refused_why))  # type: ignore[union-attr]
    replica_specs = spec.get(framework.replica_field) if framework is not None else None
    for rtype, rspec in (replica_specs if isinstance(replica_specs, Mapping) else {}).items():
        if isinstance(rspec, Mapping) and rspec.get(SPOT) is not None:
            errors.append(forbidden(f"spec.{framework.replica_field}[{rtype}].{SPOT}", SPOT_WHY))  # type: ignore[union-attr]
    main = spec.get("mainContainer")
    if main is not None and framework is not None:
        replicas = spec.get(framework.replica_field)
        # The templates are still in KubeDL's layout here: its name for the framework container.
        wanted = framework.kubedl_container_name or framework.container_name
        for rtype, rspec in (replicas if isinstance(replicas, Mapping) else {}).items():
            template = rspec.get("template") if isinstance(rspec, Mapping) else None
            containers = ((template or {}).get("spec") or {}).get("containers") or []
            index = framework_container_index(template or {}, wanted)
            found = containers[index] if index is not None and index < len(containers) else None
            name = found.get("name") if isinstance(found, Mapping) else None
            if name != main:
                errors.append(
                    invalid(
                        "spec.mainContainer",
                        f"{QUOTE.encode(main)}: kubetrain runs the framework in container "
                        f"{QUOTE.encode(name)} of "
                        f"{framework.replica_field}[{rtype}] (the first container, or the one "
                        f"named {QUOTE.encode(wanted)})",
                    )
                )
                break
    return errors


def _renamed_errors(spec: Mapping[str, Any], framework: Framework | None) -> list[FieldError]:
    """A renamed KubeDL field (`Framework.kubedl_renamed_field`) of a value KubeDL does not have,
    or contradicting kubetrain's field also given."""
    if framework is None or framework.kubedl_renamed_field is None:
        return []
    name, target, pairs = framework.kubedl_renamed_field
    value, values = spec.get(name), dict(pairs)
    meant = values.get(value) if isinstance(value, str) else None
    if value is not None and meant is None:
        return [not_supported(f"spec.{name}", value, values)]
    if meant is not None and spec.get(target) not in (None, meant):
        return [
            invalid(
                f"spec.{name}",
                f"{QUOTE.encode(value)} is {target} {QUOTE.encode(meant)}, but spec.{target} is "
                f"{QUOTE.encode(spec.get(target))}: set one of them",
            )
        ]
    return []


def kubedl_only_fields(framework: Framework | None) -> tuple[str, ...]:
    """The spec fields of a KubeDL job of the framework's kind that kubetrain's layout has not:
    refused ones, `mainContainer` and a renamed field."""
    renamed = framework.kubedl_renamed_field if framework is not None else None
    refused = framework.kubedl_refused_fields if framework is not None else ()
    return (*REFUSED, "mainContainer", *(f for f, _ in refused), *((renamed[0],) if renamed else ()))


def _scheduling_to_v1(value: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in value.items() if k not in ("priority", "priorityClassName")}
    if value.get("priorityClassName"):
        out["priorityClass"] = value["priorityClassName"]
    return out


def _scheduling_from_v1(value: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in value.items() if k != "priorityClass"}
    if value.get("priorityClass"):
        out["priorityClassName"] = value["priorityClass"]
    return out


def to_v1(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The job in kubetrain's layout (apiVersion kept); a non-KubeDL job comes back as a copy."""
    v1 = read_layout(obj)[0]
    return copy.deepcopy(dict(obj)) if v1 is obj else dict(v1)


def _converted(obj: Mapping[str, Any], framework: Framework | None) -> dict[str, Any]:
    """A KubeDL job (with a spec) in kubetrain's layout, as a copy."""
    out = copy.deepcopy(dict(obj))
    spec = out["spec"]
    renamed = framework.kubedl_renamed_field if framework is not None else None
    for key in kubedl_only_fields(framework):
        value = spec.pop(key, None)
        meant = (
            dict(renamed[2]).get(value) if renamed and key == renamed[0] and isinstance(value, str) else None
        )
        if renamed and meant is not None and spec.get(renamed[1]) is None:
            spec[renamed[1]] = meant
    replica_specs = spec.get(framework.replica_field) if framework is not None else None
    for rspec in (replica_specs if isinstance(replica_specs, dict) else {}).values():
        if isinstance(rspec, dict):
            rspec.pop(SPOT, None)
    inline = {k: spec.pop(k) for k in (*RUN_POLICY_FIELDS, SCHEDULING) if k in spec}
    given = spec.get("runPolicy")
    run_policy = {**inline, **(given if isinstance(given, dict) else {})}
    run_policy.pop("cronPolicy", None)
    if isinstance(run_policy.get(SCHEDULING), Mapping):
        run_policy[SCHEDULING] = _scheduling_to_v1(run_policy[SCHEDULING])
    if run_policy or "runPolicy" in spec:
        spec["runPolicy"] = run_policy
    if framework is not None and framework.kubedl_container_name:
        _rename_containers(
            spec.get(framework.replica_field), framework.kubedl_container_name, framework.container_name
        )
    return out


def from_v1(v1: Mapping[str, Any], original: Mapping[str, Any]) -> dict[str, Any]:
    """`v1` (a `to_v1` result, e.g. defaulted) back in the layout `original` has."""
    out = copy.deepcopy(dict(v1))
    spec = out.get("spec")
    if not is_kubedl(original) or not isinstance(spec, dict):
        return out
    ospec = original.get("spec") if isinstance(original.get("spec"), Mapping) else {}
    assert isinstance(ospec, Mapping)
    run_policy = spec.get("runPolicy")
    if "runPolicy" not in ospec and isinstance(run_policy, dict):
        del spec["runPolicy"]
        for key, value in run_policy.items():
            if key == SCHEDULING and isinstance(value, Mapping):
                value = _scheduling_from_v1(value)
            spec[key] = value  # KubeDL's inline place
    elif isinstance(run_policy, dict) and isinstance(run_policy.get(SCHEDULING), Mapping):
        run_policy[SCHEDULING] = _scheduling_from_v1(run_policy[SCHEDULING])
    framework = get_framework(str(out.get("kind")))
    for key in kubedl_only_fields(framework):
        if key in ospec:
            spec[key] = copy.deepcopy(ospec[key])
    replicas, originals = (
        (spec.get(framework.replica_field), ospec.get(framework.replica_field)) if framework else (None, None)
    )
    for rtype, before in (originals if isinstance(originals, Mapping) else {}).items():
        after = replicas.get(rtype) if isinstance(replicas, dict) else None
        if isinstance(before, Mapping) and SPOT in before and isinstance(after, dict):
            after[SPOT] = copy.deepcopy(before[SPOT])
    # What to_v1 left out is kept as the user wrote it, for validation to refuse.
    for holder, original_holder in ((spec, ospec), (spec.get("runPolicy"), ospec.get("runPolicy"))):
        before = original_holder.get(SCHEDULING) if isinstance(original_holder, Mapping) else None
        if isinstance(holder, dict) and isinstance(before, Mapping) and "priority" in before:
            holder[SCHEDULING] = {**(holder.get(SCHEDULING) or {}), "priority": before["priority"]}
        if (
            isinstance(holder, dict)
            and isinstance(original_holder, Mapping)
            and "cronPolicy" in original_holder
        ):
            holder["cronPolicy"] = copy.deepcopy(original_holder["cronPolicy"])
    if framework is not None and framework.kubedl_container_name:
        _restore_names(spec.get(framework.replica_field), ospec.get(framework.replica_field), framework)
    return out


def _restore_names(replicas: Any, original: Any, framework: Framework) -> None:
    """Containers `to_v1` renamed get their KubeDL name back."""
    if not isinstance(replicas, dict) or not isinstance(original, Mapping):
        return
    for rtype, rspec in replicas.items():
        before = original.get(rtype)
        old = ((before or {}).get("template") or {}).get("spec") or {} if isinstance(before, Mapping) else {}
        new = ((rspec or {}).get("template") or {}).get("spec") or {} if isinstance(rspec, dict) else {}
        for i, container in enumerate(new.get("containers") or []):
            olds = old.get("containers") or []
            if (
                isinstance(container, dict)
                and container.get("name") == framework.container_name
                and i < len(olds)
                and isinstance(olds[i], Mapping)
                and olds[i].get("name") == framework.kubedl_container_name
            ):
                container["name"] = framework.kubedl_container_name


def map_path(path: str, obj: Mapping[str, Any]) -> str:
    """A field path of the kubetrain layout as the KubeDL job the user wrote names it."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    if is_kubedl(obj) and "runPolicy" not in spec and path.startswith("spec.runPolicy."):
        return "spec." + path[len("spec.runPolicy.") :]
    return path


def _rename_containers(replicas: Any, old: str, new: str) -> None:
    if not isinstance(replicas, dict):
        return
    for rspec in replicas.values():
        template = rspec.get("template") if isinstance(rspec, dict) else None
        tspec = template.get("spec") if isinstance(template, dict) else None
        for container in (tspec or {}).get("containers") or []:
            if isinstance(container, dict) and container.get("name") == old:
                container["name"] = new
