"""The apply verb: `PATCH` with `application/apply-patch+yaml` (YAML or JSON), for a main
resource or its status, as k8s.io/apiserver's patch.go `applyPatcher` runs it: the fieldManager
parameter is required, the configuration must be of the resource's apiVersion and kind and carry
no managedFields, an apply to a missing object creates it (`forceAllowCreate`), and the result
goes through the same defaulting, admission, validation and write as any update (core.py).
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.request import apply as decisions
from kubetrain.devcluster.apiserver.request.patch import EMPTY
from kubetrain.devcluster.apiserver.request.target import Target
from kubetrain.devcluster.apiserver.verbs import managing


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


def applied(t: Target, current: dict[str, Any] | None, config: dict[str, Any], now: Any) -> dict[str, Any]:
    """What an apply of `config` makes of `current` (the object as served; None: the apply
    creates it), its name checked as patch.go's `checkName` does. The retry loop, defaulting,
    admission and the write are the API server's (core.py `ApiServer.patch`)."""
    obj = managing.apply(t, current, config, now)
    _check_name(t, obj)
    return obj


async def applied_converted(
    convert: managing.Convert | None,
    t: Target,
    current: dict[str, Any] | None,
    config: dict[str, Any],
    now: Any,
) -> dict[str, Any]:
    """`applied` for a resource its CRD's conversion webhook converts (`managing.converting`):
    made at the request's version, converted to storage (`managing.apply_converted`)."""
    if convert is None or not managing.converting(t):
        return applied(t, current, config, now)
    tv = managing.at_request_version(t)
    if current is None:
        obj = applied(tv, None, config, now)
        return (await convert(t.rt, [obj], t.version))[0]
    obj = await managing.apply_converted(convert, t, current, config, now)
    _check_name(t, obj)
    return obj


def config_target(t: Target, convert: managing.Convert | None) -> Target:
    """The target an apply's configuration is checked against: the request's version."""
    return managing.at_request_version(t) if convert is not None and managing.converting(t) else t
