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

- `resourceFieldRef` (`validateContainerResourceFieldSelector`): resource required, one of
  limits/requests of cpu, memory, ephemeral-storage or a `limits.hugepages-` /
  `requests.hugepages-` one; a set divisor one of those upstream allows for the resource (cpu:
  1m, 1; memory, ephemeral-storage, hugepages: 1 and the powers 1k…1E, 1Ki…1Ei), the resource
  name as the bad value at `.divisor`.
- `configMapKeyRef` / `secretKeyRef` (`validateConfigMapKeySelector`, `validateSecretKeySelector`):
  the name a DNS-1123 subdomain (so an empty name is Invalid, as upstream's check gives it), the
  key required and a config key (`IsConfigMapKey`: at most 253 of `[-._a-zA-Z0-9]`, not `.`,
  `..` or starting with `..`).
- `ValidateEnvFrom`: a non-empty prefix is a relaxed env name; each source names exactly one of
  configMapRef, secretRef (reported at `envFrom` itself, upstream's path), whose name is
  required and a DNS-1123 subdomain (a trailing '-' allowed: upstream checks it as a prefix).
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.quantity import QuantityError, format_quantity, is_binary, parse_quantity
from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import dicts, invalid, not_supported, required
from kubetrain.devcluster.apiserver.kinds.objectmeta import dns1123_subdomain_errors, qualified_name_problems

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
    resource_ref = source.get("resourceFieldRef")
    if isinstance(resource_ref, dict):
        causes += resource_field_ref_causes(resource_ref, f"{path}.resourceFieldRef")
    for kind in ("configMapKeyRef", "secretKeyRef"):
        selector = source.get(kind)
        if isinstance(selector, dict):
            causes += key_selector_causes(selector, f"{path}.{kind}")
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


# validContainerResourceFieldPathExpressions, sorted as sets.List prints them
RESOURCE_FIELDS = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
_HUGEPAGES = ("limits.hugepages-", "requests.hugepages-")
_POWERS = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
_DIVISORS = {"cpu": ("1m", "1"), "memory": _POWERS, "ephemeral-storage": _POWERS}
_DIVISOR_TEXT = {
    "cpu": "only divisor's values 1m and 1 are supported with the cpu resource",
    "memory": f"only divisor's values {', '.join(_POWERS)} are supported with the memory resource",
    "ephemeral-storage": (
        f"only divisor's values {', '.join(_POWERS)} are supported with the local ephemeral storage resource"
    ),
}
HUGEPAGES_DIVISOR = f"only divisor's values {', '.join(_POWERS)} are supported with the hugepages resource"
CONFIG_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
    "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
_KEY_CHARS = frozenset("-._abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _divisor(raw: Any) -> str | None:
    """The divisor's canonical text (`Quantity.String()`), None when unset or zero."""
    if raw is None:
        return None
    try:
        value = parse_quantity(raw)
    except QuantityError:
        return None  # refused when the body is decoded (builtinschema), not here
    return format_quantity(value, binary=is_binary(raw)) if value else None


def resource_field_ref_causes(ref: dict[str, Any], path: str) -> list[Cause]:
    """`validateContainerResourceFieldSelector` for env (no containerName required), then
    `validateContainerResourceDivisor`."""
    resource = _text(ref.get("resource"))
    causes: list[Cause] = []
    if not resource:
        causes.append(required(f"{path}.resource"))
    elif resource not in RESOURCE_FIELDS and not resource.startswith(_HUGEPAGES):
        causes.append(not_supported(f"{path}.resource", resource, RESOURCE_FIELDS))
    divisor = _divisor(ref.get("divisor"))
    if divisor is None:
        return causes
    kind = resource.partition(".")[2]
    if resource in RESOURCE_FIELDS and divisor not in _DIVISORS[kind]:
        causes.append(invalid(f"{path}.divisor", resource, _DIVISOR_TEXT[kind]))
    if resource.startswith(_HUGEPAGES) and divisor not in _POWERS:
        causes.append(invalid(f"{path}.divisor", resource, HUGEPAGES_DIVISOR))
    return causes


def config_key_problems(key: str) -> list[str]:
    """apimachinery util/validation `IsConfigMapKey`."""
    problems = ["must be no more than 253 characters"] if len(key) > 253 else []
    if not set(key) <= _KEY_CHARS:
        problems.append(CONFIG_KEY)
    if key in (".", ".."):
        problems.append(f"must not be '{key}'")
    elif key.startswith(".."):
        problems.append("must not start with '..'")
    return problems


def key_selector_causes(selector: dict[str, Any], path: str) -> list[Cause]:
    """`validateConfigMapKeySelector` / `validateSecretKeySelector` (the same checks)."""
    name = _text(selector.get("name"))
    causes = [invalid(f"{path}.name", name, m) for m in dns1123_subdomain_errors(name)]
    key = _text(selector.get("key"))
    if not key:
        return [*causes, required(f"{path}.key")]
    return causes + [invalid(f"{path}.key", key, m) for m in config_key_problems(key)]


def _source_name_causes(source: dict[str, Any], path: str) -> list[Cause]:
    """`validateConfigMapEnvSource` / `validateSecretEnvSource`: a name that is a subdomain when
    a '-' is appended (`NameIsDNSSubdomain` with prefix)."""
    name = _text(source.get("name"))
    if not name:
        return [required(f"{path}.name")]
    masked = name[:-1] + "a" if name.endswith("-") else name
    return [invalid(f"{path}.name", name, m) for m in dns1123_subdomain_errors(masked)]


def env_from_causes(env_from: Any, path: str) -> list[Cause]:
    """`ValidateEnvFrom`."""
    causes: list[Cause] = []
    for i, source in dicts(env_from):
        at = f"{path}[{i}]"
        prefix = source.get("prefix")
        if isinstance(prefix, str) and prefix:
            causes += [invalid(f"{at}.prefix", prefix, p) for p in env_name_problems(prefix)]
        count = 0
        for kind in ("configMapRef", "secretRef"):
            ref = source.get(kind)
            if ref is not None:
                count += 1
                causes += _source_name_causes(ref if isinstance(ref, dict) else {}, f"{at}.{kind}")
        if count == 0:
            causes.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            causes.append(invalid(path, "", "may not have more than one field specified at a time"))
    return causes
