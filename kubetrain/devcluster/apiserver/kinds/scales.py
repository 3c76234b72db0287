"""The autoscaling/v1 Scale view of a custom resource (apiextensions-apiserver
registry/customresource/etcd.go scaleFromCustomResource): `spec.replicas` from the CRD's
specReplicasPath, `status.replicas` from statusReplicasPath (0 when unset), `status.selector` from
labelSelectorPath, and the resource's name, namespace, uid, resourceVersion and creationTimestamp.

A write to `{plural}/scale` is admitted as kube-apiserver admits it (toScaleUpdateValidation):
webhooks see `kind` autoscaling/v1 Scale and Scales as object and oldObject, not the custom
resource; a mutating webhook's change of `spec.replicas` is carried back into the resource."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType

SCALE_KIND = ("autoscaling", "v1", "Scale")


def get_path(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.lstrip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value


def spec_replicas_path(rt: ResourceType) -> str:
    return str((rt.scale or {}).get("specReplicasPath", ".spec.replicas"))


def scale_of(rt: ResourceType, obj: Obj) -> Obj:
    paths = rt.scale or {}
    md = obj["metadata"]
    status: dict[str, Any] = {
        "replicas": get_path(obj, paths.get("statusReplicasPath", ".status.replicas")) or 0
    }
    if paths.get("labelSelectorPath"):
        selector = get_path(obj, paths["labelSelectorPath"])
        if selector is not None:
            status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md
        },
        "spec": {"replicas": get_path(obj, spec_replicas_path(rt)) or 0},
        "status": status,
    }


def with_mutated_replicas(rt: ResourceType, resource: Obj, scale: Any) -> Obj:
    """`resource` with the replicas a mutating webhook left in its Scale."""
    replicas = ((scale or {}).get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
    if not isinstance(replicas, int) or replicas == get_path(resource, spec_replicas_path(rt)):
        return resource
    changed = copy.deepcopy(resource)
    set_path(changed, spec_replicas_path(rt), replicas)
    return changed
