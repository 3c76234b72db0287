"""Small facts about observed objects the planner's parts share: who controls an object, a
pod's name and phase, whether it is being deleted. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubetrain.api.errors import QUOTE


def controlled_by(obj: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    meta = job.get("metadata") or {}
    uid = meta.get("uid")
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if not isinstance(ref, Mapping) or not ref.get("controller"):
            continue
        if uid:
            if ref.get("uid") == uid:
                return True
        elif ref.get("kind") == job.get("kind") and ref.get("name") == meta.get("name"):
            return True
    return False


def owned_by_name(objs: Iterable[Mapping[str, Any]], job: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The objects among `objs` that `job` controls, by name (an object of the name left by an
    earlier job of the same name, being garbage-collected, is not among them)."""
    return {str((o.get("metadata") or {}).get("name")): o for o in objs if controlled_by(o, job)}


def conflicting_holder(existing: Mapping[str, Any], job: Mapping[str, Any]) -> str:
    """Why an object the job asked to create, answered AlreadyExists, cannot serve it ("" when it
    can): it is being deleted, or another object controls it (one left by an earlier job of the
    same name, which garbage collection is about to delete). An object nobody controls — made
    by hand, or kept on purpose — serves the job as it is."""
    meta = existing.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return "it is being deleted"
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and not controlled_by(existing, job):
            return f"it belongs to {ref.get('kind')} {QUOTE.encode(ref.get('name'))} (uid {ref.get('uid')})"
    return ""


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_name(pod: Mapping[str, Any]) -> str:
    return str(pod["metadata"]["name"])


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """The pod's Ready condition is True (kube's podutil.IsPodReady)."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            return c.get("status") == "True"
    return False
