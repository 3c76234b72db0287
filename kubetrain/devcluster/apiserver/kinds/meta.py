"""Object metadata rules: names, generateName, uid, timestamps, generation, immutable fields."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.kinds import fielderrors

Clock = Callable[[], datetime]

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet
MAX_GENERATED_NAME_LENGTH = 58


def utcnow() -> datetime:
    return datetime.now(UTC)


def timestamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generate_name(prefix: str, rng: random.Random) -> str:
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[:MAX_GENERATED_NAME_LENGTH]
    return prefix + "".join(rng.choice(_NAME_CHARS) for _ in range(5))


def new_uid() -> str:
    return str(uuid.uuid4())


_SYSTEM_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
    "selfLink",
)


def prepare_create(obj: Obj, rt: ResourceType, namespace: str, now: datetime) -> None:
    """Fill the system-owned metadata of an object about to be created (name already decided)."""
    meta = obj["metadata"]
    for field in _SYSTEM_FIELDS:
        meta.pop(field, None)
    if rt.namespaced:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    meta["uid"] = new_uid()
    meta["creationTimestamp"] = timestamp(now)
    if rt.has_generation:
        meta["generation"] = 1


def carry_over(new: Obj, old: Obj) -> None:
    """Copy the fields an update may not change from the stored object (`rest.BeforeUpdate`):
    a uid or deletionGracePeriodSeconds only when the update leaves it out, so that a different
    one is refused (`immutable_causes`)."""
    meta, old_meta = new["metadata"], old["metadata"]
    for field in ("creationTimestamp", "deletionTimestamp", "generation", "namespace", "name"):
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    for field in ("uid", "deletionGracePeriodSeconds"):
        if meta.get(field) in (None, "") and field in old_meta:
            meta[field] = old_meta[field]
        elif meta.get(field) in (None, ""):
            meta.pop(field, None)
    meta.pop("selfLink", None)


def immutable_causes(new: Obj, old: Obj) -> list[Cause]:
    """`ValidateObjectMetaAccessorUpdate`'s immutable fields that `carry_over` leaves as given."""
    causes = []
    for field in ("uid", "deletionGracePeriodSeconds"):
        value = new["metadata"].get(field)
        if value != old["metadata"].get(field):
            causes.append(fielderrors.invalid(f"metadata.{field}", value, "field is immutable"))
    return causes


# kube-apiserver's etcd key prefixes where they are not the resource's plural
# (pkg/kubeapiserver/default_storage_factory_builder.go and the registries' REST storage)
_ETCD_PREFIXES = {
    "services": "services/specs",
    "endpoints": "services/endpoints",
    "nodes": "minions",
    "ingresses": "ingress",
    "customresourcedefinitions": "apiextensions.k8s.io/customresourcedefinitions",
}


def etcd_key(rt: ResourceType, namespace: str, name: str) -> str:
    """The object's key in kube-apiserver's etcd, as its storage errors show it."""
    prefix = f"{rt.group}/{rt.resource}" if rt.custom else _ETCD_PREFIXES.get(rt.resource, rt.resource)
    return f"/registry/{prefix}/{namespace}/{name}" if rt.namespaced else f"/registry/{prefix}/{name}"


def uid_precondition_failed(
    rt: ResourceType, namespace: str, name: str, wanted: str, stored: str
) -> errors.ApiError:
    """An update whose body names another uid: its `Preconditions` (the body's uid) fail in the
    storage layer, a 409 (`storeerr.InterpretUpdateError`)."""
    return errors.conflict(
        rt.gr,
        name,
        f"StorageError: invalid object, Code: 4, Key: {etcd_key(rt, namespace, name)}, "
        f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {wanted}, "
        f"UID in object meta: {stored}",
    )


def _content(obj: Obj, with_status: bool) -> dict[str, Any]:
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if with_status else set())
    return {k: v for k, v in obj.items() if k not in skip}


def bump_generation(new: Obj, old: Obj, rt: ResourceType) -> None:
    """metadata.generation increases on any change outside metadata (and status, when the resource
    has a status subresource) -- for CRDs and built-ins with a spec alike."""
    if not rt.has_generation:
        return
    gen = int(old["metadata"].get("generation") or 1)
    if _content(new, rt.has_status) != _content(old, rt.has_status):
        gen += 1
    new["metadata"]["generation"] = gen


def same_object(a: Obj, b: Obj) -> bool:
    """Equal apart from resourceVersion (a no-op update is not written, like kube-apiserver; a
    change of managedFields alone is a change, as upstream's field manager leaves them as they
    were on a write that changes nothing)."""
    if a.keys() != b.keys():
        return False
    for key in a:
        if key == "metadata":
            ma = {k: v for k, v in a[key].items() if k != "resourceVersion"}
            mb = {k: v for k, v in b[key].items() if k != "resourceVersion"}
            if ma != mb:
                return False
        elif a[key] != b[key]:
            return False
    return True


def unconditional_update_refused(rt: ResourceType, name: str) -> errors.ApiError:
    """A PUT without metadata.resourceVersion of a kind whose strategy does not allow
    unconditional updates (custom resources: AllowUnconditionalUpdate is false). Like the
    generic registry's Store.Update, the 422 names the resource where a kind would be."""
    return errors.invalid(
        rt.resource,
        rt.group,
        name,
        [
            errors.Cause(
                "FieldValueInvalid",
                "Invalid value: 0x0: must be specified for an update",
                "metadata.resourceVersion",
            )
        ],
    )
