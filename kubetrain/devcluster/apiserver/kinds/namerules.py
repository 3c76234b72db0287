"""The name and generateName of an object being created, checked as each kind's registry checks
them in kube-apiserver 1.36 (`ValidateObjectMeta(meta, namespaced, nameFn, ...)`, then the
generic registry's `BeforeCreate`, which runs `ValidateObjectMetaAccessor` with
`path.ValidatePathSegmentName` once the kind's own validation passed).

Each kind has a name function `(value, prefix) -> problems` (apimachinery api/validation
generic.go): `NameIsDNSSubdomain` (pods, ConfigMaps, Secrets, nodes, Endpoints, EndpointSlices,
PVCs, ServiceAccounts, Leases, PriorityClasses, HPAs, Ingresses, webhook configurations, custom
resources: apiextensions' customresource/validator.go), `NameIsDNS1035Label` (Services),
`NameIsDNSLabel` (`ValidateNamespaceName`: namespaces), RBAC's `minimalNameRequirements` (roles
and bindings: `IsValidPathSegmentName`, for a generateName too, as it ignores `prefix`), and a
CRD's (a subdomain that is `spec.names.plural + "." + spec.group`). PodDisruptionBudgets' own
validation checks no metadata, so only `BeforeCreate`'s path-segment rule applies to them.
A `generateName` is checked with `prefix=true`: the DNS functions first mask a trailing dash
(`maskTrailingDash`: `abc-` is checked as `aba`), the path-segment rule allows `.` and `..`
(`IsValidPathSegmentPrefix`). Its problems come first, at `metadata.generateName`, then the
name's at `metadata.name` — the generated name, so a bad prefix is reported at both paths, as
upstream (name generation happens before validation). Events: `eventrules.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    path_segment_name_problems,
    path_segment_prefix_problems,
)

NameFn = Callable[[str, bool], list[str]]


def mask_trailing_dash(name: str) -> str:
    """apimachinery `maskTrailingDash`: drops the last two characters and appends an 'a' (so a
    prefix ending `x-` is checked as ending `a`, the generated suffix being alphanumeric)."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    """apimachinery `NameIsDNSSubdomain`."""
    return dns1123_subdomain_errors(mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    """apimachinery `NameIsDNSLabel` (= `ValidateNamespaceName`)."""
    return dns1123_label_errors(mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    """apimachinery `NameIsDNS1035Label` (core's `ValidateServiceName`)."""
    return dns1035_label_errors(mask_trailing_dash(name) if prefix else name)


def path_segment_name(name: str, prefix: bool) -> list[str]:
    """apimachinery `path.ValidatePathSegmentName`: `BeforeCreate`'s rule for every kind."""
    return path_segment_prefix_problems(name) if prefix else path_segment_name_problems(name)


def minimal_name_requirements(name: str, prefix: bool) -> list[str]:
    """RBAC's `minimalNameRequirements`: `IsValidPathSegmentName`, whatever `prefix` is."""
    return path_segment_name_problems(name)


_RBAC = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")
_BY_RESOURCE: dict[str, NameFn] = {
    "services": name_is_dns1035_label,
    "namespaces": name_is_dns_label,
    "poddisruptionbudgets": path_segment_name,
    **dict.fromkeys(_RBAC, minimal_name_requirements),
}
CRDS = "customresourcedefinitions"


def _crd_name_fn(crd: dict[str, Any]) -> NameFn:
    """apiextensions `ValidateCustomResourceDefinition`'s nameValidationFn."""
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    required = f"{names.get('plural', '')}.{spec.get('group', '')}"

    def check(name: str, prefix: bool) -> list[str]:
        out = name_is_dns_subdomain(name, prefix)
        return out + (['must be spec.names.plural+"."+spec.group'] if name != required else [])

    return check


def name_fn(resource: str, obj: dict[str, Any]) -> NameFn:
    """The name function of `resource` (a plural of a built-in kind or of a custom resource)."""
    if resource == CRDS:
        return _crd_name_fn(obj)
    return _BY_RESOURCE.get(resource, name_is_dns_subdomain)


# kinds whose validation calls core's ValidateObjectMeta / ValidateObjectMetaUpdate (which add
# `validateKubeFinalizerName`); leases, webhook configurations and CRDs call apimachinery's,
# PodDisruptionBudgets none, custom resources warn instead (objectmeta.finalizer_warnings)
_CORE_META = frozenset(
    (
        "pods",
        "services",
        "configmaps",
        "secrets",
        "namespaces",
        "nodes",
        "endpoints",
        "persistentvolumeclaims",
        "serviceaccounts",
        "endpointslices",
        "ingresses",
        "horizontalpodautoscalers",
        "priorityclasses",
        *_RBAC,
    )
)


def core_object_meta(resource: str, custom: bool) -> bool:
    """Whether `resource`'s metadata is validated by core's `ValidateObjectMeta`."""
    return not custom and resource in _CORE_META


def create_name_causes(resource: str, obj: dict[str, Any]) -> list[Cause]:
    """The generateName's problems, then the (generated) name's, of an object being created
    (`ValidateObjectMetaAccessor`'s first two checks). Events are `eventrules.py`'s."""
    if resource == "events":
        return []
    md = obj.get("metadata") or {}
    name, prefix = str(md.get("name") or ""), str(md.get("generateName") or "")
    check = name_fn(resource, obj)
    causes = [fe.invalid("metadata.generateName", prefix, p) for p in check(prefix, True)] if prefix else []
    if not name:
        return [*causes, fe.required("metadata.name", "name or generateName is required")]
    return causes + [fe.invalid("metadata.name", name, p) for p in check(name, False)]
