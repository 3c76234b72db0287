"""Discovery documents: /version, /api, /apis, /apis/{group}, and the per group-version resource lists.

Served unaggregated (`application/json`); clients asking for aggregated discovery (apidiscovery v2)
fall back to these documents, as they do against API servers older than 1.26.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.kinds.resources import Registry

# kube-apiserver 1.36's /version (apimachinery version.Info; since 1.33 with the emulation and
# minimum compatibility versions: kube-apiserver's defaults, the binary's own and the one before).
KUBERNETES_VERSION = "v1.36.4"
VERSION = {
    "major": "1",
    "minor": "36",
    "emulationMajor": "1",
    "emulationMinor": "36",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "35",
    "gitVersion": f"{KUBERNETES_VERSION}-kubetrain-devcluster",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-08-11T00:00:00Z",
    "goVersion": "go1.26.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_STATUS_VERBS = ["get", "patch", "update"]


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, versions: list[str]) -> Obj:
    vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(registry: Registry) -> Obj:
    groups = [_group(g, vs) for g, vs in registry.groups().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> Obj | None:
    versions = registry.groups().get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def _entry(rt: ResourceType) -> Obj:
    out: dict[str, Any] = {
        "name": rt.resource,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    return out


def _sub(rt: ResourceType, sub: str) -> Obj:
    base = {"name": f"{rt.resource}/{sub}", "singularName": "", "namespaced": rt.namespaced}
    if sub == "status":
        return {**base, "kind": rt.kind, "verbs": _STATUS_VERBS}
    if sub == "scale":
        return {**base, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": _STATUS_VERBS}
    if sub == "binding":
        return {**base, "kind": "Binding", "verbs": ["create"]}
    if sub == "log":
        return {**base, "kind": "Pod", "verbs": ["get"]}
    if sub == "eviction":
        return {**base, "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}
    return {**base, "kind": rt.kind, "verbs": ["update"]}


def resource_list(registry: Registry, group: str, version: str) -> Obj | None:
    resources: list[Obj] = []
    for rt in registry.all():
        if rt.group != group or version not in rt.versions:
            continue
        resources.append(_entry(rt))
        resources.extend(_sub(rt, s) for s in rt.subresources)
    if not resources:
        return None
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
