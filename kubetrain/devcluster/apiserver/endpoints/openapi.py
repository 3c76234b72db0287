"""A minimal OpenAPI v3 surface: `/openapi/v3` (the group-version index) and one document per group
version listing each resource's paths with their operations.

It is what kubectl (1.27+) reads to learn that the server validates fields itself: a PATCH
operation tagged with `x-kubernetes-group-version-kind` that takes a `fieldValidation` parameter.
kubectl then sends `fieldValidation=Strict` instead of validating client-side. Custom resources
carry their structural schema under components.schemas, descriptions included (what `kubectl
explain` prints); built-in kinds have no schema here (kubectl falls back to its compiled-in types
for strategic merge patches).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.endpoints import discovery
from kubetrain.devcluster.apiserver.kinds.resources import Registry

_QUERY = ("dryRun", "fieldManager", "fieldValidation", "force")

_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
# What kube-apiserver publishes for a custom resource's apiVersion, kind and metadata whatever its
# CRD's schema says (apiextensions-apiserver pkg/controller/openapi/builder `buildKubeNative`:
# `addTypeMetaProperties` copies metav1.TypeMeta's definitions, and metadata is ObjectMeta
# described as metav1beta1.PartialObjectMetadata's `metadata`). **Limit:** ObjectMeta's own fields
# are not published here, so `kubectl explain <kind>.metadata` lists none.
_TYPE_META_PROPERTIES: dict[str, Obj] = {
    "apiVersion": {
        "type": "string",
        "description": "APIVersion defines the versioned schema of this representation of an object. "
        "Servers should convert recognized schemas to the latest internal value, and may reject "
        f"unrecognized values. More info: {_CONVENTIONS}#resources",
    },
    "kind": {
        "type": "string",
        "description": "Kind is a string value representing the REST resource this object represents. "
        "Servers may infer this from the endpoint the client submits requests to. Cannot be updated. "
        f"In CamelCase. More info: {_CONVENTIONS}#types-kinds",
    },
    "metadata": {
        "type": "object",
        "description": f"Standard object's metadata. More info: {_CONVENTIONS}#metadata",
    },
}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _params(names: tuple[str, ...]) -> list[Obj]:
    return [{"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True} for n in names]


def _op(rt: ResourceType, version: str, action: str, op_id: str, params: tuple[str, ...] = ()) -> Obj:
    return {
        "operationId": op_id,
        "parameters": _params(params),
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": version, "kind": rt.kind},
    }


def _schema_name(rt: ResourceType, version: str) -> str:
    group = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return f"{group}.{version}.{rt.kind}"


def group_version_document(registry: Registry, group: str, version: str) -> Obj | None:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    found = False
    for rt in registry.all():
        if rt.group != group or version not in rt.versions:
            continue
        found = True
        prefix = "/" + _gv_path(group, version)
        scope = f"{prefix}/namespaces/{{namespace}}" if rt.namespaced else prefix
        base = f"{scope}/{rt.resource}"
        kind = rt.kind
        paths[base] = {
            "get": _op(rt, version, "list", f"list{kind}"),
            "post": _op(rt, version, "post", f"create{kind}", _QUERY[:3]),
        }
        paths[base + "/{name}"] = {
            "get": _op(rt, version, "get", f"read{kind}"),
            "put": _op(rt, version, "put", f"replace{kind}", _QUERY[:3]),
            "patch": _op(rt, version, "patch", f"patch{kind}", _QUERY),
            "delete": _op(rt, version, "delete", f"delete{kind}", ("dryRun",)),
        }
        for sub in rt.subresources:
            if sub in ("status", "scale"):
                paths[f"{base}/{{name}}/{sub}"] = {
                    "get": _op(rt, version, "get", f"read{kind}{sub.title()}"),
                    "put": _op(rt, version, "put", f"replace{kind}{sub.title()}", _QUERY[:3]),
                    "patch": _op(rt, version, "patch", f"patch{kind}{sub.title()}", _QUERY),
                }
        sch = rt.schemas.get(version)
        if sch is not None:
            schemas[_schema_name(rt, version)] = {
                **sch,
                "properties": {**sch.get("properties", {}), **_TYPE_META_PROPERTIES},
                "x-kubernetes-group-version-kind": [{"group": rt.group, "version": version, "kind": kind}],
            }
    if not found:
        return None
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": discovery.KUBERNETES_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def index(registry: Registry) -> Obj:
    paths: dict[str, Any] = {}
    for group, versions in registry.groups().items():
        for version in versions:
            doc = group_version_document(registry, group, version)
            digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
            gv = _gv_path(group, version)
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
    return {"paths": paths}
