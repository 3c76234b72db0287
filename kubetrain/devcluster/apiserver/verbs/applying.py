"""The apply verb: `PATCH` with `application/apply-patch+yaml` (YAML or JSON), for a main
resource or its status, as k8s.io/apiserver's patch.go `applyPatcher` runs it: the fieldManager
parameter is required, the configuration must be of the resource's apiVersion and kind and carry
no managedFields, an apply to a missing object creates it (`forceAllowCreate`), and the result
goes through the same defaulting, admission, validation and write as any update (core.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.request import apply as decisions
from kubetrain.devcluster.apiserver.request import decoding
from kubetrain.devcluster.apiserver.request.patch import EMPTY
from kubetrain.devcluster.apiserver.request.target import Result, Target
from kubetrain.devcluster.apiserver.verbs import managing

if TYPE_CHECKING:
    from kubetrain.devcluster.apiserver.verbs.core import ApiServer


def check_options(t: Target, *, is_apply: bool) -> None:
    decisions.check_options(t.field_manager, t.force, is_apply=is_apply)


def _gvk_text(api_version: Any, kind: Any) -> str:
    """Go's `GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`."""
    group, _, version = str(api_version or "").rpartition("/")
    return f"{group}/{version}, Kind={kind or ''}"


def config_of(t: Target, body: Any) -> dict[str, Any]:
    """The applied configuration, checked as versioncheck.go and structuredmerge.go do."""
    config = {} if body is EMPTY or body is None else body
    if not isinstance(config, dict):
        raise errors.bad_request("error decoding patch: the apply configuration must be an object")
    if config.get("apiVersion") != t.api_version or config.get("kind") != t.rt.kind:
        raise errors.bad_request(
            f"invalid object type: {_gvk_text(config.get('apiVersion'), config.get('kind'))}"
        )
    md = config.get("metadata")
    if isinstance(md, dict) and md.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    return config


def _check_name(t: Target, obj: dict[str, Any]) -> None:
    """patch.go `checkName`."""
    name = (obj.get("metadata") or {}).get("name", "")
    if name != t.name:
        raise errors.bad_request(
            f"the name of the object ({name}) does not match the name on the URL ({t.name})"
        )


async def apply(api: ApiServer, t: Target, body: Any) -> Result:
    from kubetrain.devcluster.apiserver.verbs.core import PATCH_RETRIES, _Retry

    check_options(t, is_apply=True)
    config = config_of(t, body)
    for _attempt in range(PATCH_RETRIES):
        old = api.store.get(t.rt.key, t.namespace if t.rt.namespaced else "", t.name)
        if old is None:
            if t.subresource:
                raise errors.not_found(t.rt.gr, t.name)
            created = managing.apply(t, None, config, api.clock())
            _check_name(t, created)
            return await api.create(t, created, applied=True)
        merged = managing.apply(t, api.out(t, old), config, api.clock())
        _check_name(t, merged)
        obj = decoding.decode(t, merged)
        warnings = decoding.unknown_fields(t, obj)
        try:
            rv = old["metadata"]["resourceVersion"]
            return await api._write(t, old, obj, rv, warnings, retryable=True, applied=True)
        except _Retry:
            continue
    raise errors.conflict(t.rt.gr, t.name, errors.STALE)
