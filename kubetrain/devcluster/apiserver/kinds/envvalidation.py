"""A container's `env` as kube-apiserver validates it (k8s.io/kubernetes pkg/apis/core/validation
`ValidateEnv`, `validateEnvVarValueFrom`, `validateObjectFieldSelector`; pkg/apis/core/pods
`ConvertDownwardAPIFieldLabel`), with upstream's causes.

- A variable's name is required and, under RelaxedEnvironmentVariableValidation (GA, always on
  since 1.34), any printable ASCII character but '=' (apimachinery `IsRelaxedEnvVarName`).
- `valueFrom` names exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef,
  and not beside a non-empty `value`.
- `fieldRef.fieldPath` is required and one of the pod fields the downward API exposes to env
  (metadata.name, metadata.namespace, metadata.uid, spec.nodeName, spec.serviceAccountName,
  status.hostIP(s), status.podIP(s)) or `metadata.labels['<key>']` /
  `metadata.annotations['<key>']` with a qualified-name key; `apiVersion` defaults to v1 and
  only v1 is converted.

Not validated: resourceFieldRef's resource and divisor, the key selectors' names and keys.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import dicts, invalid, not_supported, required
from kubetrain.devcluster.apiserver.kinds.objectmeta import qualified_name_problems

RELAXED_ENV_NAME = (
    "a valid environment variable name must consist only of printable ASCII characters other than '='"
)
VALUE_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
NO_SOURCE = "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
# validEnvDownwardAPIFieldPathExpressions, sorted as sets.List prints them
ENV_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
# the labels ConvertDownwardAPIFieldLabel converts for v1 (beyond these, "field label not supported")
_CONVERTIBLE = (
    *ENV_FIELD_PATHS,
    "metadata.annotations",
    "metadata.labels",
    "spec.restartPolicy",
    "spec.schedulerName",
    "status.phase",
)


def env_name_problems(name: str) -> list[str]:
    """apimachinery util/validation `IsRelaxedEnvVarName`."""
    if any(ord(ch) > 0x7E or ord(ch) < 0x20 or ch == "=" for ch in name):
        return [RELAXED_ENV_NAME]
    return []


def env_causes(env: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, var in dicts(env):
        at = f"{path}[{i}]"
        name = var.get("name")
        if not name:
            causes.append(required(f"{at}.name"))
        elif isinstance(name, str):
            causes += [invalid(f"{at}.name", name, p) for p in env_name_problems(name)]
        source = var.get("valueFrom")
        if isinstance(source, dict):
            causes += value_from_causes(source, bool(var.get("value")), f"{at}.valueFrom")
    return causes


def value_from_causes(source: dict[str, Any], has_value: bool, path: str) -> list[Cause]:
    """`validateEnvVarValueFrom`."""
    causes: list[Cause] = []
    count = sum(1 for key in VALUE_SOURCES if source.get(key) is not None)
    field_ref = source.get("fieldRef")
    if isinstance(field_ref, dict):
        causes += field_ref_causes(field_ref, f"{path}.fieldRef")
    if count == 0:
        causes.append(invalid(path, "", NO_SOURCE))
    elif has_value:
        causes.append(invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        causes.append(invalid(path, "", "may not have more than one field specified at a time"))
    return causes


def _split_subscript(field_path: str) -> tuple[str, str] | None:
    """apimachinery-side `fieldpath.SplitMaybeSubscriptedPath`: `path['key']` → (path, key)."""
    if not field_path.endswith("']"):
        return None
    head, sep, key = field_path[:-2].partition("['")
    return (head, key) if sep and head else None


def field_ref_causes(ref: dict[str, Any], path: str) -> list[Cause]:
    """`validateObjectFieldSelector` with the env expressions."""
    version = ref.get("apiVersion") or "v1"  # v1 SetDefaults_ObjectFieldSelector
    field_path = ref.get("fieldPath")
    if not isinstance(field_path, str) or not field_path:
        return [required(f"{path}.fieldPath")]
    subscripted = _split_subscript(field_path)
    error = ""
    if version != "v1":
        error = f"unsupported pod version: {version}"
    elif subscripted is not None and subscripted[0] not in ("metadata.annotations", "metadata.labels"):
        error = f"field label does not support subscript: {field_path}"
    elif subscripted is None and field_path not in _CONVERTIBLE:
        error = f"field label not supported: {field_path}"
    if error:
        return [invalid(f"{path}.fieldPath", field_path, f"error converting fieldPath: {error}")]
    if subscripted is not None:
        head, key = subscripted
        key = key.lower() if head == "metadata.annotations" else key
        return [invalid(path, key, p) for p in qualified_name_problems(key)]
    if field_path not in ENV_FIELD_PATHS:
        return [not_supported(f"{path}.fieldPath", field_path, ENV_FIELD_PATHS)]
    return []


def default_field_refs(container: dict[str, Any]) -> None:
    """v1 `SetDefaults_ObjectFieldSelector`: a fieldRef's apiVersion defaults to v1."""
    for _, var in dicts(container.get("env")):
        source = var.get("valueFrom")
        ref = source.get("fieldRef") if isinstance(source, dict) else None
        if isinstance(ref, dict) and not ref.get("apiVersion"):
            ref["apiVersion"] = "v1"
