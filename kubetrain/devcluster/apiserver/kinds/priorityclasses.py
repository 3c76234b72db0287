"""scheduling.k8s.io/v1 PriorityClass: the two system classes every cluster has, defaulting and
validation, as kube-apiserver's scheduling API does them.

- System classes (pkg/apis/scheduling/v1 helpers.go `systemPriorityClasses`): system-node-critical
  (2000001000) and system-cluster-critical (2000000000), not globalDefault, created at start
  (pkg/registry/scheduling/rest storage_scheduling.go `AddSystemPriorityClasses`).
- Defaulting (pkg/apis/scheduling/v1 defaults.go `SetDefaults_PriorityClass`): preemptionPolicy
  PreemptLowerPriority.
- Validation (pkg/apis/scheduling/validation validation.go `ValidatePriorityClass`): a name with
  the `system-` prefix must be a system class with its value and globalDefault; another class's
  value is at most 1000000000 (`HighestUserDefinablePriority`); preemptionPolicy is
  PreemptLowerPriority or Never (core validation `ValidatePreemptionPolicy`).
  `ValidatePriorityClassUpdate`: value and preemptionPolicy are immutable.
- `value` is a Go int32: a number that is no int32 is refused as the JSON decoder refuses it.

The checks that need the other classes (one globalDefault) and a pod's priority are the Priority
admission plugin's: verbs/priority.py.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import fielderrors

PRIORITY_CLASSES_KEY = "priorityclasses.scheduling.k8s.io"
SYSTEM_PREFIX = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_INT32 = (-(2**31), 2**31 - 1)

# name -> (value, description); neither is globalDefault.
SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-node-critical": (
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "system-cluster-critical": (
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to another "
        "node if necessary.",
    ),
}


def system_classes() -> list[Obj]:
    """The system classes as a cluster serves them (before metadata is prepared)."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": description,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        for name, (value, description) in SYSTEM_PRIORITY_CLASSES.items()
    ]


def default_priority_class(pc: Obj, old: Obj | None) -> None:
    """`SetDefaults_PriorityClass`; and generation 1 from create on (the strategy's
    `PrepareForCreate`; an update keeps it)."""
    pc.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if old is None:
        pc["metadata"]["generation"] = 1


def value_of(pc: Obj) -> int:
    value = pc.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _known_system_class_error(name: str, value: int, global_default: bool) -> str:
    """pkg/apis/scheduling/v1 helpers.go `IsKnownSystemPriorityClass`'s error, or ''."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if known[0] != value:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def decode_error(pc: Obj) -> str:
    """The JSON decoder's error for a `value` that is no int32 or a `globalDefault` that is no
    boolean, or ''."""
    value, flag = pc.get("value"), pc.get("globalDefault")
    if value is not None:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number:
            return _unmarshal(_json_kind(value), "value", "int32")
        if not (float(value).is_integer() and _INT32[0] <= value <= _INT32[1]):
            shown = int(value) if float(value).is_integer() else value
            return _unmarshal(f"number {shown}", "value", "int32")
    if flag is not None and not isinstance(flag, bool):
        return _unmarshal(_json_kind(flag), "globalDefault", "bool")
    return ""


def _json_kind(value: Any) -> str:
    return {str: "string", list: "array", dict: "object", bool: "bool"}.get(type(value), "number")


def _unmarshal(what: str, field: str, go_type: str) -> str:
    return f"json: cannot unmarshal {what} into Go struct field PriorityClass.{field} of type {go_type}"


def priority_class_causes(pc: Obj, old: Obj | None) -> list[Cause]:
    """`ValidatePriorityClass`, and on an update `ValidatePriorityClassUpdate` (the name's own
    checks are objectmeta's)."""
    name = str(pc.get("metadata", {}).get("name", ""))
    value = value_of(pc)
    causes: list[Cause] = []
    if name.startswith(SYSTEM_PREFIX):
        error = _known_system_class_error(name, value, pc.get("globalDefault") is True)
        if error:
            causes.append(
                fielderrors.forbidden(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use "
                    f"only. error: {error}",
                )
            )
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(
            fielderrors.forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    policy = pc.get("preemptionPolicy")
    if policy == "":
        causes.append(fielderrors.required("preemptionPolicy"))
    elif policy is not None and policy not in PREEMPTION_POLICIES:
        causes.append(fielderrors.not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    if old is not None:
        if value != value_of(old):
            causes.append(fielderrors.forbidden("value", "may not be changed in an update."))
        if policy != old.get("preemptionPolicy"):
            causes.append(fielderrors.invalid("preemptionPolicy", policy, "field is immutable"))
    return causes
