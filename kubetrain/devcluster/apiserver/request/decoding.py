"""Decoding a request body into an object of the request's resource, as kube-apiserver's
handlers do before anything else: the apiVersion, kind and namespace checks, and the fields the
resource does not have, which are dropped and, per the request's `fieldValidation`, reported.

```python
obj = decode(t, body)                            # 400 for a wrong apiVersion, kind or namespace
warnings += unknown_fields(t, obj)               # create/update: Strict raises 400 BadRequest
warnings += unknown_fields(t, obj, patch=(content_type, body))   # patch: Strict raises 422
```

Unknown fields are those a built-in kind's Go type does not have (builtinschema.py, the
Kubernetes OpenAPI schema) and those a custom resource's structural schema prunes (schema.py
`prune`). Both are removed from `obj`, whatever the directive (k8s.io/apiserver
pkg/endpoints/handlers):
- Ignore: nothing else.
- Warn (the default, also without the parameter): a `Warning: 299 - "unknown field \\"spec.foo\\""`
  header per field (`addStrictDecodingWarnings`).
- Strict, create and update (create.go `createHandler`, update.go `UpdateResource`): 400
  BadRequest `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown
  field "spec.foo", unknown field "spec.bar"` (rest.go `transformDecodeError`).
- Strict, patch (patch.go `jsonPatcher.applyPatchToCurrentObject` and `applyPatchToObject`): the
  unknown fields are those of the patched object; 422 Invalid with an empty kind and name,
  ` "" is invalid: patch: Invalid value: "<value>": strict decoding error: unknown field ...`,
  one cause of field `patch`. The value is the patched object as JSON (keys sorted, as Go's
  encoding of the patched map) for JSON and merge patches, and the patch formatted as Go's
  `%+v` of a map for strategic merge patches.

Duplicate fields of the body (duplicates.py, found by the handler into `Target.duplicates`) are
strict errors of the same kinds, `duplicate field "metadata.name"`, ordered as `_strict_errors`
says; so are a JSON patch's keys an operation does not have, `json patch unknown field "[0].foo"`.
Under Strict and Warn a JSON patch that does not decode as a list of operations is refused
first, 400 `error decoding patch: json: cannot unmarshal ...` (`check_json_patch`).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import builtinschema, priorityclasses, schema
from kubetrain.devcluster.apiserver.kinds.crds import coerce
from kubetrain.devcluster.apiserver.kinds.priorityclasses import PRIORITY_CLASSES_KEY
from kubetrain.devcluster.apiserver.request import duplicates
from kubetrain.devcluster.apiserver.request.duplicates import go_float, json_type
from kubetrain.devcluster.apiserver.request.patch import EMPTY, JSON_PATCH, STRATEGIC, empty_body_error
from kubetrain.devcluster.apiserver.request.target import Target

_OP_KEYS = ("op", "path", "from", "value")  # patch.go `jsonPatchOp`'s JSON names
_OP_STRINGS = ("op", "path", "from")  # `jsonPatchOp`'s `string` fields
_OP_FIELD = re.compile(r"^\[\d+\]\.(op|path|from|value)($|[.\[])")


def decode(t: Target, body: Any) -> Obj:
    """A copy of the body as an object of `t`'s resource (apiVersion, kind and metadata set)."""
    if not isinstance(body, dict):
        raise errors.bad_request(
            f"the body of the request was in an unknown format - expected an object of kind {t.rt.kind}"
        )
    obj = copy.deepcopy(body)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != t.api_version and t.subresource == "":
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({t.api_version})"
        )
    if kind and kind != t.rt.kind and t.subresource == "":
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({t.rt.kind})"
        )
    obj["apiVersion"], obj["kind"] = t.api_version, t.rt.kind
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    if t.rt.key == PRIORITY_CLASSES_KEY and (err := priorityclasses.decode_error(obj)):
        kind = t.rt.kind
        raise errors.bad_request(f'{kind} in version "{t.version}" cannot be handled as a {kind}: {err}')
    ns = obj["metadata"].get("namespace")
    if t.rt.namespaced and ns and ns != t.namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    return obj


def unknown_fields(
    t: Target, obj: Obj, patch: tuple[str, Any] | None = None, kind: tuple[str, str, str] | None = None
) -> list[str]:
    """Drop the fields of `obj` its resource does not have; the warnings to send (Warn), or
    raise the Strict error. `patch` is the (content type, body) of a PATCH whose result `obj` is;
    `kind` the (group, version, kind) of a subresource's body (a Binding, an Eviction, a Scale)."""
    if kind is None and t.rt.custom:
        _refuse_malformed_embedded(t, obj, patch)
    found = builtinschema.unknown_fields(*kind, obj) if kind else _drop_unknown(t, obj)
    if t.field_validation == "Ignore":
        return []
    gvk = kind or (None if t.rt.custom else (t.rt.group, t.version, t.rt.kind))
    texts = _strict_errors(t, obj, found, patch, gvk)
    if not texts:
        return []
    if t.field_validation != "Strict":
        return [w for text in texts for w in duplicates.yaml_warnings(text)]
    detail = "strict decoding error: " + ", ".join(texts)
    if patch is None:
        name, version = (kind[2], kind[1]) if kind else (t.rt.kind, t.version)
        raise errors.bad_request(f'{name} in version "{version}" cannot be handled as a {name}: {detail}')
    content_type, body = patch
    value = go_format(body) if content_type.startswith(STRATEGIC) else _go_json(obj)
    message = f"Invalid value: {json.dumps(value, ensure_ascii=False)}: {detail}"
    cause = {"reason": "FieldValueInvalid", "message": message, "field": "patch"}
    raise ApiError(422, "Invalid", f' "" is invalid: patch: {message}', {"causes": [cause]})


def _strict_errors(
    t: Target, obj: Obj, found: list[str], patch: tuple[str, Any] | None, gvk: tuple[str, str, str] | None
) -> list[str]:
    """The strict decoding errors in upstream's order. A patch's duplicates are its body's and
    come first (patch.go `applyJSPatch`, `patchResource` for strategic merge: the patch is
    decoded strictly before the patched object); a JSON patch's, its operations' unknown keys
    too, are prefixed `json patch ` (`json_patch_errors`).
    A custom resource's come before the pruned fields (apiextensions-apiserver
    customresource_handler.go `schemaCoercingDecoder.Decode`). A built-in object's are met in
    one pass over the body with its unknown fields, so both are in document order; a repeated
    unknown field, or one inside an unknown field, is reported only as unknown; one inside a
    value its Go type decodes with its own UnmarshalJSON (a RawExtension, a JSONSchemaProps
    union: `builtinschema.opaque_paths`) is not reported. A YAML body's repeated keys are one
    error, before the rest."""
    unknown = [f'unknown field "{path}"' for path in found]
    dups = t.duplicates
    if patch is not None and patch[0].startswith(JSON_PATCH):
        return json_patch_errors(patch[1], dups) + unknown
    if dups is None:
        return unknown
    if dups.yaml:  # YAMLToJSONStrict's error comes first (json.go `Serializer.unmarshal`)
        return [dups.yaml, *unknown]
    if patch is not None:
        return [f'duplicate field "{p}"' for _, p in dups.paths] + unknown
    if gvk is None:
        return [f'duplicate field "{p}"' for _, p in dups.paths] + unknown
    opaque = builtinschema.opaque_paths(*gvk, obj)
    events = [
        (i, f'duplicate field "{p}"')
        for i, p in dups.paths
        if not duplicates.under(p, found) and not duplicates.inside(p, opaque)
    ]
    events += [(dups.position(p), text) for p, text in zip(found, unknown, strict=True)]
    return [text for _, text in sorted(events, key=lambda e: e[0])]


def json_patch_errors(ops: Any, dups: duplicates.Duplicates | None) -> list[str]:
    """The strict errors of a JSON patch body, as kube-apiserver finds them before applying it
    (patch.go `jsonPatcher.applyJSPatch`: sigs.k8s.io/json `UnmarshalStrict` into
    `[]jsonPatchOp`, each error prefixed `json patch `). An operation has the fields `op`, `path`,
    `from` and `value`, matched case-sensitively; any other key is an unknown field `[i].key`,
    reported once and its value not looked into (decode.go `decodeState.object`), a repeated
    known key or a repeated key inside `value` (an `interface{}`) a duplicate field; all in
    document order, at most 100 (`saveStrictError`)."""
    events: list[tuple[int, str]] = []
    if dups is not None:
        events += [(i, f'json patch duplicate field "{p}"') for i, p in dups.paths if _OP_FIELD.match(p)]
    if isinstance(ops, list):
        for n, op in enumerate(ops):
            if not isinstance(op, dict):
                continue
            for key in op:
                if key not in _OP_KEYS:
                    path = f"[{n}].{key}"
                    where = dups.position(path) if dups is not None else len(events)
                    events.append((where, f'json patch unknown field "{path}"'))
    return [text for _, text in sorted(events, key=lambda e: e[0])][: duplicates.MAX_ERRORS]


def check_json_patch(t: Target, content_type: str, body: Any) -> None:
    """Under Strict and Warn, refuse a JSON patch that does not decode as a list of operations
    before it is applied: 400 `error decoding patch: <err>` (patch.go `jsonPatcher.applyJSPatch`,
    after the object is read, so a missing object is 404 first). An empty body is 400 for every
    patch type and directive (`patch.empty_body_error`)."""
    if body is EMPTY:
        raise errors.bad_request(empty_body_error(content_type, t.field_validation))
    if not content_type.startswith(JSON_PATCH) or t.field_validation == "Ignore":
        return
    err = json_patch_decode_error(body, t.duplicates)
    if err is not None:
        raise errors.bad_request(f"error decoding patch: {err}")


def json_patch_decode_error(ops: Any, dups: duplicates.Duplicates | None = None) -> str | None:
    """The error sigs.k8s.io/json `UnmarshalStrict` gives decoding `ops` into `[]jsonPatchOp`,
    or None: the first in document order (decode.go `decodeState.saveError` keeps the first),
    worded as `UnmarshalTypeError.Error`, with the struct and field when inside an operation
    (`addErrorContext`). `null` decodes as nothing anywhere; `value` takes any JSON. A key
    repeated inside one operation is decoded each time, so its first value of the wrong type
    counts, where it stands (`dups.repeated_in` has the pairs Python's parser kept only the last
    of)."""
    if ops is None:
        return None
    if not isinstance(ops, list):
        return f"json: cannot unmarshal {json_type(ops)} into Go value of type []handlers.jsonPatchOp"
    for n, op in enumerate(ops):
        if op is None:
            continue
        if not isinstance(op, dict):
            return f"json: cannot unmarshal {json_type(op)} into Go value of type handlers.jsonPatchOp"
        pairs = dups.repeated_in.get(f"[{n}]") if dups is not None else None
        for key, kind in pairs or [(k, json_type(v)) for k, v in op.items()]:
            if key in _OP_STRINGS and kind not in ("string", "null"):
                return f"json: cannot unmarshal {kind} into Go struct field jsonPatchOp.{key} of type string"
    return None


def _drop_unknown(t: Target, obj: Obj) -> list[str]:
    if not t.rt.custom:
        return builtinschema.unknown_fields(t.rt.group, t.version, t.rt.kind, obj)
    # customresource_handler.go `unstructuredSchemaCoercer.apply`: the metadata's unknown fields
    # (dropped as ObjectMeta is set back), then the pruned ones, sorted (`PruneWithOptions`)
    meta = builtinschema.unknown_metadata_fields(obj)
    sch = t.rt.schemas.get(t.version)
    if sch is None:
        return meta
    dropped: list[str] = []
    schema.prune(obj, sch, dropped=dropped)
    # then the embedded resources' metadata (objectmeta `CoerceWithOptions`), sorted apart
    return meta + sorted(d.lstrip(".") for d in dropped) + coerce.coerce(obj, sch)


def _refuse_malformed_embedded(t: Target, obj: Obj, patch: tuple[str, Any] | None) -> None:
    """The error `unstructuredSchemaCoercer.apply` fails the decoding with, whatever the
    `fieldValidation`, where an embedded resource's apiVersion or kind is not a string or its
    metadata does not decode as ObjectMeta: create and update answer 400 (rest.go
    `transformDecodeError`), a patch 422 Invalid on the field `patch` with the patched object
    (patch.go `applyPatchToCurrentObject`, a non-strict decoding error)."""
    sch = t.rt.schemas.get(t.version)
    err = coerce.coerce_error(obj, sch) if sch is not None else None
    if err is None:
        return
    if patch is None:
        kind = t.rt.kind
        raise errors.bad_request(f'{kind} in version "{t.version}" cannot be handled as a {kind}: {err}')
    message = f"Invalid value: {json.dumps(_go_json(obj), ensure_ascii=False)}: {err}"
    cause = {"reason": "FieldValueInvalid", "message": message, "field": "patch"}
    raise ApiError(422, "Invalid", f' "" is invalid: patch: {message}', {"causes": [cause]})


def _go_json(obj: Obj) -> str:
    """The object as Go's encoding/json writes a map: keys sorted, no spaces."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def go_format(value: Any) -> str:
    """`fmt.Sprintf("%+v", v)` of decoded JSON in Go: `map[a:1 b:[x y]]`, keys sorted."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)
