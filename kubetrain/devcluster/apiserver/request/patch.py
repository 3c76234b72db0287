"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge patch is implemented for the built-in core types as far as kubectl needs it: maps
merge recursively, `null` deletes, lists named below merge by their merge key (containers, env,
ports, volumes, ...), `finalizers` merge as a set, `$patch: replace|delete` directives are
honoured and other `$` directives are dropped; every other list is replaced.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from kubetrain.devcluster.apiserver.base import errors

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ownerReferences": "uid",
    "conditions": "type",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "podIPs": "ip",
    "readinessGates": "conditionType",
    "resourceClaims": "name",
}
_SET_LISTS = {"finalizers"}


class EmptyBody:
    """The body of a PATCH request that has none, or only JSON whitespace: no JSON value, which
    each of patch.go's decoders refuses (`empty_body_error`), unlike a body of `null`."""


EMPTY = EmptyBody()
JSON_WHITESPACE = b" \t\r\n"
END_OF_INPUT = "unexpected end of JSON input"


def empty_body_error(content_type: str, field_validation: str) -> str:
    """The 400 message kube-apiserver's patch.go answers a PATCH with an empty body: Go's JSON
    decoders (encoding/json, sigs.k8s.io/json) fail with the `SyntaxError` `unexpected end of
    JSON input`. A strategic merge patch (`strategicPatchObject`) says just that; a JSON patch or
    merge patch prefixes it `error decoding patch: ` when decoded strictly under Strict and Warn
    (`jsonPatcher.applyJSPatch`), and under Ignore a JSON patch says it bare (evanphx/json-patch
    v4 `DecodePatch`) and a merge patch `Invalid JSON Patch` (`doMergePatch` turns a patch's
    `SyntaxError` into `ErrBadJSONPatch`)."""
    if content_type.startswith(STRATEGIC):
        return END_OF_INPUT
    if field_validation != "Ignore":
        return f"error decoding patch: {END_OF_INPUT}"
    return END_OF_INPUT if content_type.startswith(JSON_PATCH) else "Invalid JSON Patch"


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, ops: Any) -> Any:
    if ops is None:
        # evanphx/json-patch v4 `DecodePatch` is `json.Unmarshal` into a slice, which leaves
        # `null` an empty Patch, and `Patch.Apply` of no operations returns the document.
        return copy.deepcopy(target)
    if not isinstance(ops, list):
        raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        return jsonpatch.JsonPatch(ops).apply(target, in_place=False)
    except jsonpatch.JsonPatchTestFailed as exc:
        raise errors.ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from exc
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as exc:
        raise errors.ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from exc


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        for item in items:
            if isinstance(item, dict):
                return "containerPort" if "containerPort" in item else "port"
        return None
    return _MERGE_KEYS.get(field)


def strategic_merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if not k.startswith("$")}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        elif isinstance(value, dict):
            result[key] = strategic_merge(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _merge_list(field: str, current: list[Any], patch: list[Any]) -> list[Any]:
    if field in _SET_LISTS:
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(item)
        return out
    key = _merge_key(field, patch + current)
    if key is None or not all(isinstance(i, dict) for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    out = list(current)
    for item in patch:
        if item.get("$patch") == "replace":
            return [copy.deepcopy(i) for i in patch if "$patch" not in i]
        idx = next(
            (n for n, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item.get(key)), None
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
        elif idx is None:
            out.append(strategic_merge({}, item))
        else:
            out[idx] = strategic_merge(out[idx], item)
    return out


def check_media_type(content_type: str, *, custom: bool) -> str:
    """The patch type of a PATCH request, or 415 for one the resource does not take. Like
    kube-apiserver's PatchResource this comes first, before the object is looked up."""
    ctype = content_type.split(";")[0].strip()
    accepted = [JSON_PATCH, MERGE_PATCH] + ([] if custom else [STRATEGIC]) + [APPLY]
    if ctype not in accepted:
        raise errors.unsupported_media_type(ctype, accepted)
    return ctype


def apply_patch(content_type: str, target: Any, body: Any, *, custom: bool) -> Any:
    """A body of `null` is, as in k8s.io/apiserver's patch.go: for a merge patch 400 `Invalid
    JSON Patch` (evanphx/json-patch v4 `doMergePatch` answers `ErrBadJSONPatch` for a patch that
    decodes to a nil map); for a JSON patch and a strategic merge patch (`strategicPatchObject`
    decodes it into a nil `map[string]interface{}`) no change."""
    ctype = check_media_type(content_type, custom=custom)
    if ctype == APPLY:  # server-side apply is its own verb (verbs/applying.py), not a patch function
        raise errors.unsupported_media_type(
            ctype, [JSON_PATCH, MERGE_PATCH] + ([] if custom else [STRATEGIC])
        )
    if ctype == MERGE_PATCH:
        if body is None:
            raise errors.bad_request("Invalid JSON Patch")
        return merge_patch(target, body)
    if ctype == JSON_PATCH:
        return json_patch(target, body)
    if body is None:
        return copy.deepcopy(target)
    return strategic_merge(target, body)
