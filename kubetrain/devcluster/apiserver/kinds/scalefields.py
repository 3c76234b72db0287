"""Who owns the replicas after a write to `{custom}/scale` (pure: no I/O, no clock), as
k8s.io/apimachinery's `managedfields.ScaleHandler` moves entries between a resource and its
autoscaling/v1 Scale, and as kube-apiserver's custom resource handler runs it.

```python
managed = to_parent(parent, "kubetrain.io/v1", mappings(rt), scale={})  # the resource's managers
old = old_scale(rt, obj)          # the Scale webhooks see as a /scale write's oldObject
raise apply_refusal(body)         # an apply to /scale: 400 for a bad configuration, else 500
```

`ToParent`: a parent entry of an apiVersion the resource does not have is dropped; one that does
not own the replicas path is kept; one that owns it loses it unless the same manager identifier
holds `spec.replicas` in the Scale's entries (dropped when that leaves it nothing); every Scale
entry owning `spec.replicas` comes back owning the replicas path at the request's apiVersion, with
the time the parent had for that identifier (none for a new one).

What the Scale's entries are on a custom resource: kube-apiserver builds the /scale field manager
of a custom resource over the CRD's OpenAPI models, which have no `autoscaling/v1.Scale`
(kubernetes/kubernetes#116311, #131892). Its `UpdateNoErrors` fails and removes the Scale's
managedFields, so a PUT or patch of /scale hands `to_parent` no entries: the replicas path leaves
every manager and the writer gets no entry. Its `Apply` fails the same way after the apply's own
checks: 500 `failed to create typed patch object (ns/name; autoscaling/v1, Kind=Scale): no
corresponding type for autoscaling/v1, Kind=Scale` (structuredmerge.go; an error that is no
`metav1.Status`, so `ErrorToAPIStatus` answers 500 with no reason).
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.kinds import managedfields
from kubetrain.devcluster.apiserver.kinds.fieldpaths import Path, f
from kubetrain.devcluster.apiserver.kinds.managedfields import Entry, Managed
from kubetrain.devcluster.apiserver.kinds.scales import scale_of, spec_replicas_path

SCALE_API_VERSION = "autoscaling/v1"
SCALE_GVK = "autoscaling/v1, Kind=Scale"
REPLICAS_IN_SCALE: Path = (f("spec"), f("replicas"))


def replicas_path(rt: ResourceType) -> Path:
    """The CRD's specReplicasPath as a field path (`.spec.replicas` -> spec, replicas)."""
    return tuple(f(part) for part in spec_replicas_path(rt).lstrip(".").split("."))


def mappings(rt: ResourceType) -> dict[str, Path | None]:
    """`ResourcePathMappings` of a custom resource: each version's replicas path, None for a
    version without a scale subresource."""
    path = replicas_path(rt) if rt.scale is not None else None
    return {rt.api_version(v): path for v in rt.versions}


def to_subresource(parent: Managed, paths: dict[str, Path | None]) -> Managed:
    """`ScaleHandler.ToSubresource`: the managers owning the replicas path, each owning the
    Scale's `spec.replicas` at autoscaling/v1 (its identifier, time and operation kept)."""
    out: Managed = {}
    for key, e in parent.items():
        path = paths.get(e.api_version)
        if path is not None and path in e.fields:
            out[key] = Entry(SCALE_API_VERSION, {REPLICAS_IN_SCALE}, e.time, e.applied)
    return out


def old_scale(rt: ResourceType, obj: Obj) -> Obj:
    """The Scale a /scale write starts from (what webhooks see as its oldObject): the resource's
    Scale view with the managedFields `to_subresource` gives it."""
    scale = scale_of(rt, obj)
    stored = (obj.get("metadata") or {}).get("managedFields")
    managed = to_subresource(managedfields.from_request(None, stored, "scale"), mappings(rt))
    if managed:
        scale["metadata"]["managedFields"] = managedfields.encode(managed)
    return scale


def to_parent(parent: Managed, api_version: str, paths: dict[str, Path | None], scale: Managed) -> Managed:
    """`ScaleHandler.ToParent`: the resource's managers after a /scale write whose Scale ended
    with the managers `scale` (keyed by their identifiers as the Scale recorded them)."""
    out: Managed = {}
    rest = dict(scale)
    for key, e in parent.items():
        if e.api_version not in paths:
            continue
        path = paths[e.api_version]
        if path is None or path not in e.fields:
            out[key] = e
        elif key in rest:
            out[key] = e
            del rest[key]
        else:
            left = e.fields - {path}
            if left:
                out[key] = Entry(e.api_version, left, e.time, e.applied)
    target = paths.get(api_version)
    for key, e in rest.items():
        if REPLICAS_IN_SCALE not in e.fields or target is None:
            continue
        before = parent.get(key)
        out[key] = Entry(api_version, {target}, before.time if before else None, e.applied)
    return out


def apply_refusal(body: Any) -> errors.ApiError:
    """Why an apply of `body` to a custom resource's /scale fails: 400 when it is no
    autoscaling/v1 Scale (`versionCheckManager`) or carries managedFields, else the 500 of the
    typed conversion. `body` is the decoded configuration (None: `null` or no body)."""
    if body is not None and not isinstance(body, dict):
        return errors.bad_request("error decoding patch: the apply configuration must be an object")
    config = body or {}
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if api_version != SCALE_API_VERSION or kind != "Scale":
        group, _, version = str(api_version or "").rpartition("/")
        return errors.bad_request(f"invalid object type: {group}/{version}, Kind={kind or ''}")
    md = config.get("metadata")
    md = md if isinstance(md, dict) else {}
    if md.get("managedFields") is not None:
        return errors.bad_request("metadata.managedFields must be nil")
    where = f"{md.get('namespace') or ''}/{md.get('name') or ''}; {SCALE_GVK}"
    return errors.ApiError(
        500,
        "",
        f"failed to create typed patch object ({where}): no corresponding type for {SCALE_GVK}",
    )
