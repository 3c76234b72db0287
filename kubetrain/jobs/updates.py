"""Update rules shared by every kind (docs/behaviour.md §3): the replica types, pod templates
(except scheduling directives while suspended), replica counts (while suspended, or the
scalable type), managedBy and the scheduling queue; then the framework's own
(`Framework.validate_update`)."""

from __future__ import annotations

from typing import Any

from kubetrain.api.errors import RECREATE, FieldError, forbidden
from kubetrain.frameworks.base import Framework
from kubetrain.jobs.replicadraft import ReplicaDraft


def _suspended(spec: dict[str, Any]) -> bool:
    run_policy = spec.get("runPolicy")
    return isinstance(run_policy, dict) and run_policy.get("suspend") is True


def update_errors(
    spec: dict[str, Any],
    old_spec: dict[str, Any],
    replicas: tuple[ReplicaDraft, ...] | None,
    old_replicas: tuple[ReplicaDraft, ...] | None,
    framework: Framework,
) -> list[FieldError]:
    """What the update of `old_spec` to `spec` may not change; `replicas` and `old_replicas`:
    their replica maps, as read (None: not a mapping)."""
    errors: list[FieldError] = []
    if replicas is None or old_replicas is None:
        return errors
    old_by_type = {r.key: r for r in old_replicas}
    was_suspended = _suspended(old_spec)
    if {r.key for r in replicas} != set(old_by_type):
        errors.append(
            forbidden(
                f"spec.{framework.replica_field}",
                f"the set of replica types is immutable (was {', '.join(map(str, old_by_type))}; "
                f"now {', '.join(str(r.key) for r in replicas)}): {RECREATE}",
            )
        )
    scalable = framework.replica_bounds(spec) is not None
    for r in replicas:
        old = old_by_type.get(r.key)
        if not isinstance(r.spec, dict) or old is None or not isinstance(old.spec, dict):
            continue
        template, old_template = r.template, old.template
        if template != old_template and not (
            (was_suspended or _suspended(spec)) and _scheduling_change_only(template, old_template)
        ):
            errors.append(
                forbidden(
                    f"{r.path}.template",
                    "the pod template is immutable, except its scheduling directives (labels, "
                    f"annotations, {', '.join(SCHEDULING_DIRECTIVES)}) while the job is or becomes "
                    f"suspended: {RECREATE}",
                )
            )
        replicas_changed = r.replicas != old.replicas
        resizable = scalable and r.key == framework.scalable_replica_type
        if replicas_changed and not was_suspended and not resizable:
            errors.append(
                forbidden(
                    f"{r.path}.replicas",
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
