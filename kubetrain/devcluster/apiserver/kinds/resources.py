"""The resource registry: built-in resources plus the ones each established CRD serves."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.kinds import eventsv1
from kubetrain.devcluster.apiserver.kinds.crds import celrules

_META_FIELDS = ("metadata.name", "metadata.namespace")

BUILTINS: list[ResourceType] = [
    ResourceType(
        "",
        ["v1"],
        "namespaces",
        "Namespace",
        False,
        short_names=["ns"],
        subresources=("status", "finalize"),
        field_selectors=("status.phase",),
        return_deleted_object=True,
    ),
    ResourceType(
        "",
        ["v1"],
        "pods",
        "Pod",
        True,
        short_names=["po"],
        categories=["all"],
        subresources=("status", "binding", "eviction", "log"),
        has_generation=True,
        return_deleted_object=True,
        field_selectors=(
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
    ),
    ResourceType("", ["v1"], "bindings", "Binding", True, verbs=("create",)),
    ResourceType("authentication.k8s.io", ["v1"], "tokenreviews", "TokenReview", False, verbs=("create",)),
    ResourceType(
        "authentication.k8s.io", ["v1"], "selfsubjectreviews", "SelfSubjectReview", False, verbs=("create",)
    ),
    ResourceType(
        "authorization.k8s.io",
        ["v1"],
        "subjectaccessreviews",
        "SubjectAccessReview",
        False,
        verbs=("create",),
    ),
    ResourceType(
        "authorization.k8s.io",
        ["v1"],
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        False,
        verbs=("create",),
    ),
    ResourceType(
        "",
        ["v1"],
        "services",
        "Service",
        True,
        short_names=["svc"],
        categories=["all"],
        subresources=("status",),
        return_deleted_object=True,
    ),
    ResourceType(
        "",
        ["v1"],
        "events",
        "Event",
        True,
        short_names=["ev"],
        field_selectors=(
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ),
    ),
    ResourceType("", ["v1"], "secrets", "Secret", True, field_selectors=("type",)),
    ResourceType("", ["v1"], "configmaps", "ConfigMap", True, short_names=["cm"]),
    ResourceType(
        "",
        ["v1"],
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        True,
        short_names=["pvc"],
        subresources=("status",),
    ),
    ResourceType(
        "", ["v1"], "serviceaccounts", "ServiceAccount", True, short_names=["sa"], subresources=("token",)
    ),
    ResourceType(
        "",
        ["v1"],
        "nodes",
        "Node",
        False,
        short_names=["no"],
        subresources=("status",),
        field_selectors=("spec.unschedulable",),
        return_deleted_object=True,
    ),
    ResourceType("", ["v1"], "endpoints", "Endpoints", True, short_names=["ep"]),
    ResourceType("discovery.k8s.io", ["v1"], "endpointslices", "EndpointSlice", True),
    ResourceType(
        "events.k8s.io",
        ["v1"],
        "events",
        "Event",
        True,
        short_names=["ev"],
        # a view of the core Events' storage (kinds/eventsv1.py): its labels are mapped to theirs
        field_selectors=tuple(label for label in eventsv1.FIELD_LABELS if not label.startswith("metadata.")),
    ),
    ResourceType(
        "", ["v1"], "resourcequotas", "ResourceQuota", True, short_names=["quota"], subresources=("status",)
    ),
    ResourceType("coordination.k8s.io", ["v1"], "leases", "Lease", True),
    ResourceType(
        "policy",
        ["v1"],
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        short_names=["pdb"],
        subresources=("status",),
        has_generation=True,
    ),
    ResourceType("scheduling.k8s.io", ["v1"], "priorityclasses", "PriorityClass", False, short_names=["pc"]),
    ResourceType(
        "autoscaling",
        ["v2"],
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        True,
        short_names=["hpa"],
        categories=["all"],
        subresources=("status",),
    ),
    ResourceType(
        "networking.k8s.io",
        ["v1"],
        "ingresses",
        "Ingress",
        True,
        short_names=["ing"],
        has_generation=True,
        subresources=("status",),
    ),
    ResourceType("rbac.authorization.k8s.io", ["v1"], "roles", "Role", True),
    ResourceType("rbac.authorization.k8s.io", ["v1"], "rolebindings", "RoleBinding", True),
    ResourceType("rbac.authorization.k8s.io", ["v1"], "clusterroles", "ClusterRole", False),
    ResourceType("rbac.authorization.k8s.io", ["v1"], "clusterrolebindings", "ClusterRoleBinding", False),
    ResourceType(
        "admissionregistration.k8s.io",
        ["v1"],
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        False,
        has_generation=True,
    ),
    ResourceType(
        "admissionregistration.k8s.io",
        ["v1"],
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
        has_generation=True,
    ),
    ResourceType(
        "apiextensions.k8s.io",
        ["v1"],
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        short_names=["crd", "crds"],
        categories=["api-extensions"],
        subresources=("status",),
        has_generation=True,
        return_deleted_object=True,
    ),
]

CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"
NAMESPACES_KEY = "namespaces"
PODS_KEY = "pods"
MUTATING_KEY = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
VALIDATING_KEY = "validatingwebhookconfigurations.admissionregistration.k8s.io"
WEBHOOK_KEYS = (MUTATING_KEY, VALIDATING_KEY)


def all_field_selectors(rt: ResourceType) -> tuple[str, ...]:
    return _META_FIELDS + rt.field_selectors


class Registry:
    def __init__(self) -> None:
        self._by_key: dict[str, ResourceType] = {}
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}  # (group, version, plural)
        for rt in BUILTINS:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        old = self._by_key.get(rt.key)
        if old is not None:
            for v in old.versions:
                self._by_path.pop((old.group, v, old.resource), None)
        self._by_key[rt.key] = rt
        for v in rt.versions:
            self._by_path[(rt.group, v, rt.resource)] = rt

    def remove(self, key: str) -> ResourceType | None:
        rt = self._by_key.pop(key, None)
        if rt is not None:
            for v in rt.versions:
                self._by_path.pop((rt.group, v, rt.resource), None)
        return rt

    def lookup(self, group: str, version: str, resource: str) -> ResourceType | None:
        return self._by_path.get((group, version, resource))

    def by_key(self, key: str) -> ResourceType | None:
        return self._by_key.get(key)

    def by_kind(self, group: str, kind: str) -> ResourceType | None:
        for rt in self._by_key.values():
            if rt.group == group and rt.kind == kind:
                return rt
        return None

    def all(self) -> list[ResourceType]:
        return list(self._by_key.values())

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions (preferred first), in a stable order."""
        out: dict[str, list[str]] = {}
        for rt in self._by_key.values():
            versions = out.setdefault(rt.group, [])
            for v in rt.versions:
                if v not in versions:
                    versions.append(v)
        return out


def crd_resource_type(crd: Obj) -> ResourceType:
    """The resource a CRD (apiextensions.k8s.io/v1) serves."""
    spec: dict[str, Any] = crd["spec"]
    names = spec["names"]
    conversion = spec.get("conversion")
    served = [v for v in spec.get("versions", []) if v.get("served", True)]
    served.sort(key=lambda v: _version_priority(v["name"]))
    subresources: set[str] = set()
    schemas: dict[str, Obj] = {}
    compiled: dict[str, celrules.Compiled] = {}
    scale: Obj | None = None
    columns: list[Obj] = []
    selectable: list[str] = []
    for v in served:
        sub = v.get("subresources") or {}
        if "status" in sub:
            subresources.add("status")
        if "scale" in sub:
            subresources.add("scale")
            scale = sub["scale"]
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema is not None:
            schemas[v["name"]] = schema
            compiled[v["name"]] = celrules.compile_schema(schema)
            celrules.log_skipped(f"{crd['metadata'].get('name', '')} {v['name']}", compiled[v["name"]])
        if not columns:
            columns = list(v.get("additionalPrinterColumns") or [])
        for sf in v.get("selectableFields") or []:
            path = sf.get("jsonPath", "").lstrip(".")
            if path and path not in selectable:
                selectable.append(path)
    return ResourceType(
        group=spec["group"],
        versions=[v["name"] for v in served],
        resource=names["plural"],
        kind=names["kind"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        singular=names.get("singular") or names["kind"].lower(),
        short_names=list(names.get("shortNames") or []),
        categories=list(names.get("categories") or []),
        list_kind=names.get("listKind") or names["kind"] + "List",
        subresources=tuple(sorted(subresources)),
        field_selectors=tuple(selectable),
        has_generation=True,
        custom=True,
        schemas=schemas,
        cel=compiled,
        scale=scale,
        printer_columns=columns,
        storage_version=next((v["name"] for v in served if v.get("storage")), ""),
        conversion=conversion if (conversion or {}).get("strategy") == "Webhook" else None,
    )


def _version_priority(name: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority: GA > beta > alpha, higher numbers first, others last by name."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
    if m is None:
        return (3, 0, 0, name)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, name)
