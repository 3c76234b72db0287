"""A pod's tolerations as kube-apiserver validates them (k8s.io/kubernetes pkg/apis/core/validation,
validation.go), with upstream's causes:

- `ValidateTolerations`, per toleration at `spec.tolerations[i]`, in upstream's order:
  a non-empty key is a qualified name (`ValidateLabelName`, at `.key`); an empty key needs
  operator `Exists` ("match all values and all keys", at `.operator`); `tolerationSeconds` only
  with effect `NoExecute` (at `.effect`); operator `Equal` or empty: the value a label value
  (`IsValidLabelValue`, messages joined with ";" and reported at `.operator` — upstream's path);
  `Exists`: no value (the value the bad one, since Kubernetes 1.32);
  any other operator Unsupported ("Equal", "Exists"); a non-empty effect one of NoSchedule,
  PreferNoSchedule, NoExecute (`validateTaintEffect`).
- `validateOnlyAddedTolerations` (`ValidatePodUpdate`): an update keeps every existing
  toleration — only its `tolerationSeconds` may change — and may add new ones; else Forbidden at
  `spec.tolerations`.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import (
    dicts,
    forbidden,
    invalid,
    not_supported,
)
from kubetrain.devcluster.apiserver.kinds.objectmeta import label_value_problems, qualified_name_problems

OPERATORS = ("Equal", "Exists")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")  # validateTaintEffect's validValues
EMPTY_KEY = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
SECONDS_NEED_NO_EXECUTE = "effect must be 'NoExecute' when `tolerationSeconds` is set"
EXISTS_WITHOUT_VALUE = "value must be empty when `operator` is 'Exists'"
ONLY_ADDED = "existing toleration can not be modified except its tolerationSeconds"
_FIELDS = ("key", "operator", "value", "effect")


def _text(toleration: dict[str, Any], field: str) -> str:
    value = toleration.get(field)
    return value if isinstance(value, str) else ""


def toleration_causes(tolerations: Any, path: str = "spec.tolerations") -> list[Cause]:
    """`ValidateTolerations`."""
    causes: list[Cause] = []
    for i, toleration in dicts(tolerations):
        at = f"{path}[{i}]"
        key, operator = _text(toleration, "key"), _text(toleration, "operator")
        value, effect = _text(toleration, "value"), _text(toleration, "effect")
        if key:
            causes += [invalid(f"{at}.key", key, p) for p in qualified_name_problems(key)]
        if not key and operator != "Exists":
            causes.append(invalid(f"{at}.operator", operator, EMPTY_KEY))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(invalid(f"{at}.effect", effect, SECONDS_NEED_NO_EXECUTE))
        if operator in ("", "Equal"):
            problems = label_value_problems(value)
            if problems:
                causes.append(invalid(f"{at}.operator", value, ";".join(problems)))
        elif operator == "Exists":
            if value:
                causes.append(invalid(f"{at}.operator", value, EXISTS_WITHOUT_VALUE))
        else:
            causes.append(not_supported(f"{at}.operator", operator, OPERATORS))
        if effect and effect not in EFFECTS:
            causes.append(not_supported(f"{at}.effect", effect, EFFECTS))
    return causes


def _identity(toleration: dict[str, Any]) -> tuple[str, ...]:
    return tuple(_text(toleration, f) for f in _FIELDS)


def update_causes(new: Any, old: Any, path: str = "spec.tolerations") -> list[Cause]:
    """`validateOnlyAddedTolerations`'s own check: every old toleration still there
    (tolerationSeconds aside). The new list's `ValidateTolerations` causes come from the pod
    spec's validation, which an update runs first."""
    kept = {_identity(t) for _, t in dicts(new)}
    if any(_identity(t) not in kept for _, t in dicts(old)):
        return [forbidden(path, ONLY_ADDED)]
    return []
