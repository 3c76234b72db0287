"""The field manager on the write path: `metadata.managedFields` of an object being created,
updated or applied (managedfields.py, apply.py), as k8s.io/apiserver's handlers install
`FieldManager.UpdateNoErrors` on create, update and patch and `FieldManager.Apply` on apply.

The manager is the fieldManager parameter, else the User-Agent's prefix; a status write is
recorded with `subresource: status`. The fields a write may not change are reset before the
comparison (status on the main resource, everything but status on /status), so they are not
owned by it, as the strategies' `GetResetFields` make upstream.

A write to a custom resource at a version its CRD converts through a conversion webhook runs at
the storage version (verbs/conversion.py), but is recorded as kube-apiserver records it: at the
version the client used, its fields as that version has them, and each manager of another version
losing what the write changed as the objects converted to that version show it (`Views`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.kinds import fieldpaths, managedfields, meta, scalefields, smdschema
from kubetrain.devcluster.apiserver.kinds.fieldpaths import FieldSet, f
from kubetrain.devcluster.apiserver.kinds.typedvalue import compare
from kubetrain.devcluster.apiserver.request import apply as applying
from kubetrain.devcluster.apiserver.request import lastapplied
from kubetrain.devcluster.apiserver.request.target import Target

# The CRD's conversion webhook: `objs` converted to a version of the resource.
Convert = Callable[[ResourceType, list[Obj], str], Awaitable[list[Obj]]]
# A write's object before (None: a create) and after, at each version it is compared at.
Views = dict[str, tuple[Obj | None, Obj]]


def manager_key(t: Target, operation: str) -> managedfields.ManagerKey:
    name = managedfields.manager_name(t.field_manager, t.user_agent)
    return managedfields.key_for(name, operation, t.api_version, t.subresource)


def ignored_fields(t: Target, config: Any) -> FieldSet:
    """The reset fields of the write's strategy: `status` on a main resource with a status
    subresource; on /status every top-level field but status."""
    if t.subresource == "status":
        keys = config.keys() if isinstance(config, dict) else ()
        return {(f(k),) for k in keys if k not in ("status", "apiVersion", "kind")}
    if t.rt.has_status:
        return {(f("status"),)}
    return set()


def converting(t: Target) -> bool:
    """Whether the resource converts between its versions through its CRD's conversion webhook."""
    return t.rt.conversion is not None and bool(t.rt.storage_version)


def request_version(t: Target) -> str:
    return t.request_version or t.version


def at_request_version(t: Target) -> Target:
    return dataclasses.replace(t, version=request_version(t), request_version="")


def _entry_versions(t: Target, *objs: Obj | None) -> set[str]:
    """The versions of the resource the objects' managedFields entries were recorded at."""
    out: set[str] = set()
    for obj in objs:
        for e in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
            group, _, version = str(
                (e or {}).get("apiVersion", "") if isinstance(e, dict) else ""
            ).rpartition("/")
            if group == t.rt.group and version:
                out.add(version)
    return out


async def apply_converted(convert: Convert, t: Target, current: Obj, config: dict[str, Any], now: Any) -> Obj:
    """An apply to the stored object `current` of a `converting` resource, recorded as
    kube-apiserver records it: made at the request's version, each manager of another version
    compared at its own; the result at the storage version."""
    tv = at_request_version(t)
    live = (await convert(t.rt, [current], tv.version))[0]
    others: managedfields.Others | None = None
    versions = _entry_versions(t, current) & set(t.rt.versions) - {tv.version}
    if versions:
        merged = apply(tv, live, config, now, {}, probe=True)
        others = {}
        for version in versions:
            before, after = await convert(t.rt, [live, merged], version)
            others[t.rt.api_version(version)] = _changes(tv, version, before, after, config)
    result = apply(tv, live, config, now, others)
    return (await convert(t.rt, [result], t.version))[0]


async def views(t: Target, convert: Convert | None, old: Obj | None, new: Obj) -> Views | None:
    """`old` and `new` (at the storage version) at the request's version and at each other served
    version a managedFields entry has; None when the resource is not `converting` or every one of
    them is the storage version."""
    if convert is None or not converting(t):
        return None
    versions = ({request_version(t)} | _entry_versions(t, old, new)) & set(t.rt.versions)
    if versions <= {t.version}:
        return None
    out: Views = {t.version: (old, new)}
    for version in versions - {t.version}:
        objs = await convert(t.rt, [o for o in (old, new) if o is not None], version)
        out[version] = (objs[0] if old is not None else None, objs[-1])
    return out


def _changes(t: Target, version: str, before: Obj, after: Obj, config: Any) -> tuple[FieldSet, FieldSet]:
    """What a write changed and removed, compared at `version` (reset fields left out)."""
    added, modified, removed = compare(
        _without_managed(before), _without_managed(after), smdschema.root_type(t.rt, version)
    )
    ignored = ignored_fields(t, config)
    return (
        fieldpaths.recursive_difference(added | modified, ignored),
        fieldpaths.recursive_difference(removed, ignored),
    )


def record(t: Target, old: Obj | None, new: Obj, now: Any, seen: Views | None = None) -> None:
    """Set `new`'s managedFields for an Update (create when `old` is None) by the request's
    manager, starting from the ones the client sent (`decodeLiveOrNew`). A write to a custom
    resource's /scale records nothing for its manager and takes the replicas path from every
    manager (kinds/scalefields.py: kube-apiserver's /scale field manager fails on them). `seen`:
    the write at each version it is recorded and compared at (`views`)."""
    md = new["metadata"]
    sent = md.pop("managedFields", None)
    stored = old["metadata"].get("managedFields") if old is not None else None
    if t.subresource == "scale" and old is not None:
        parent = managedfields.from_request(None, stored, t.subresource)
        _store(md, scalefields.to_parent(parent, t.api_version, scalefields.mappings(t.rt), {}))
        return
    managed = managedfields.from_request(sent, stored, t.subresource)
    others: managedfields.Others | None = None
    if seen is not None:
        zero_object = smdschema.zero_object(t.rt)
        others = {
            t.rt.api_version(v): _changes(t, v, o if o is not None else zero_object, n, n)
            for v, (o, n) in seen.items()
            if v != request_version(t)
        }
        old, new_at = seen[request_version(t)]
        t = at_request_version(t)
    else:
        new_at = new
    typ = smdschema.root_type(t.rt, t.version)
    zero = None
    if old is None:
        before = smdschema.zero_object(t.rt)
        zero = smdschema.map_paths(before)
    else:
        before = _without_managed(old)
    after = _without_managed(new_at)
    managed = managedfields.record_update(
        managed,
        before,
        after,
        typ,
        manager_key(t, managedfields.UPDATE),
        t.api_version,
        meta.timestamp(now),
        ignored=ignored_fields(t, after),
        zero=zero,
        others=others,
    )
    _store(md, managed)


def apply(
    t: Target,
    live: Obj | None,
    config: dict[str, Any],
    now: Any,
    others: managedfields.Others | None = None,
    *,
    probe: bool = False,
) -> Obj:
    """The object an apply of `config` makes of `live` (None: apply creates), managedFields set.
    `others`: what it changes at the other versions managers have (`views`); `probe`: the merge
    alone, forced and without the annotation's sync, to be converted for `others`."""
    typ = smdschema.root_type(t.rt, t.version)
    base: Obj = _without_managed(live) if live is not None else smdschema.zero_object(t.rt)
    stored = live["metadata"].get("managedFields") if live is not None else None
    managed = managedfields.from_request(None, stored, t.subresource)
    upgrading = t.field_manager == lastapplied.UPGRADING_MANAGER and not probe
    merged, managed = applying.apply(
        base,
        config,
        typ,
        managed,
        manager_key(t, managedfields.APPLY),
        t.api_version,
        force=probe or bool(t.force),
        now=meta.timestamp(now),
        ignored=ignored_fields(t, config),
        allowed=(lambda: lastapplied.allowed_conflicts(base, t.api_version, typ)) if upgrading else None,
        others=others,
    )
    if upgrading:
        merged = lastapplied.synced(merged, config)
    merged = dict(merged)
    merged["metadata"] = dict(merged.get("metadata") or {})
    _store(merged["metadata"], managed)
    return merged


def _store(md: dict[str, Any], managed: managedfields.Managed) -> None:
    if managed:
        md["managedFields"] = managedfields.encode(managed)
    else:
        md.pop("managedFields", None)


def _without_managed(obj: Obj) -> Obj:
    md = obj.get("metadata")
    if not isinstance(md, dict) or "managedFields" not in md:
        return obj
    return {**obj, "metadata": {k: v for k, v in md.items() if k != "managedFields"}}
