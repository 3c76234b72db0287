"""The field manager on the write path: `metadata.managedFields` of an object being created,
updated or applied (managedfields.py, apply.py), as k8s.io/apiserver's handlers install
`FieldManager.UpdateNoErrors` on create, update and patch and `FieldManager.Apply` on apply.

The manager is the fieldManager parameter, else the User-Agent's prefix; a status write is
recorded with `subresource: status`. The fields a write may not change are reset before the
comparison (status on the main resource, everything but status on /status), so they are not
owned by it, as the strategies' `GetResetFields` make upstream.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import managedfields, meta, scalefields, smdschema
from kubetrain.devcluster.apiserver.kinds.fieldpaths import FieldSet, f
from kubetrain.devcluster.apiserver.request import apply as applying
from kubetrain.devcluster.apiserver.request import lastapplied
from kubetrain.devcluster.apiserver.request.target import Target


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


def record(t: Target, old: Obj | None, new: Obj, now: Any) -> None:
    """Set `new`'s managedFields for an Update (create when `old` is None) by the request's
    manager, starting from the ones the client sent (`decodeLiveOrNew`). A write to a custom
    resource's /scale records nothing for its manager and takes the replicas path from every
    manager (kinds/scalefields.py: kube-apiserver's /scale field manager fails on them)."""
    md = new["metadata"]
    sent = md.pop("managedFields", None)
    stored = old["metadata"].get("managedFields") if old is not None else None
    if t.subresource == "scale" and old is not None:
        parent = managedfields.from_request(None, stored, t.subresource)
        _store(md, scalefields.to_parent(parent, t.api_version, scalefields.mappings(t.rt), {}))
        return
    managed = managedfields.from_request(sent, stored, t.subresource)
    typ = smdschema.root_type(t.rt, t.version)
    zero = None
    if old is None:
        before = smdschema.zero_object(t.rt)
        zero = smdschema.map_paths(before)
    else:
        before = _without_managed(old)
    after = _without_managed(new)
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
    )
    _store(md, managed)


def apply(t: Target, live: Obj | None, config: dict[str, Any], now: Any) -> Obj:
    """The object an apply of `config` makes of `live` (None: apply creates), managedFields set."""
    typ = smdschema.root_type(t.rt, t.version)
    base: Obj = _without_managed(live) if live is not None else smdschema.zero_object(t.rt)
    stored = live["metadata"].get("managedFields") if live is not None else None
    managed = managedfields.from_request(None, stored, t.subresource)
    upgrading = t.field_manager == lastapplied.UPGRADING_MANAGER
    merged, managed = applying.apply(
        base,
        config,
        typ,
        managed,
        manager_key(t, managedfields.APPLY),
        t.api_version,
        force=bool(t.force),
        now=meta.timestamp(now),
        ignored=ignored_fields(t, config),
        allowed=(lambda: lastapplied.allowed_conflicts(base, t.api_version, typ)) if upgrading else None,
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
