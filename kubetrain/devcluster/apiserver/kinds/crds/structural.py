"""Structural-schema rules of a CRD's OpenAPI v3 schema, and the validity of its defaults.

Ports of k8s.io/apiextensions-apiserver/pkg/apiserver/schema: `NewStructural` (its conversion
errors, e.g. `OpenAPIV3Schema 'id' is not supported`), `ValidateStructural`
(`validateStructuralInvariants`, `validateStructuralMetadataInvariants`,
`validateNestedValueValidation`, `validateStructuralCompleteness`; errors sorted by their text as
upstream sorts them), and pkg/apiserver/schema/defaulting `ValidateDefaults` with pruned defaults
required (a default must survive pruning and validate against its own schema).

Not ported: the metadata coercion of defaults inside embedded resources' `metadata`
(`objectmeta.Coerce`/`Validate`), and `pattern`s are compiled with Python's `re`, not Go's RE2
(the error text after `but isn't:` differs).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe
from kubetrain.devcluster.apiserver.kinds import schema as crschema
from kubetrain.devcluster.apiserver.kinds.crds.schema import Schema, has_default, key

ROOT, ITEM, FIELD = "root", "item", "field"
_UNSUPPORTED = (
    ("id", "id"),
    ("$schema", "schema"),
    ("$ref", "$ref"),
    ("patternProperties", "patternProperties"),
    ("dependencies", "dependencies"),
    ("additionalItems", "additionalItems"),
    ("definitions", "definitions"),
)
_JUNCTORS = ("allOf", "anyOf", "oneOf")
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def conversion_error(s: Any) -> str | None:
    """The error `NewStructural` returns for `s`, or None."""
    if not isinstance(s, dict):
        return None
    for field, name in _UNSUPPORTED:
        value = s.get(field)
        if value or (field == "additionalItems" and value is not None):
            return f"OpenAPIV3Schema '{name}' is not supported"
    nested: list[Any] = [s.get("not")]
    for junctor in _JUNCTORS:
        nested += s.get(junctor) or []
    for clause in nested:
        if (err := conversion_error(clause)) is not None:
            return err
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    items = s.get("items")
    if isinstance(items, list) and items:
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    children: list[Any] = [items] if isinstance(items, dict) else []
    children += list((s.get("properties") or {}).values())
    children.append(s.get("additionalProperties"))
    for child in children:
        if (err := conversion_error(child)) is not None:
            return err
    return None


def structural_causes(s: Schema, path: str) -> list[Cause]:
    """`ValidateStructural`: invariants of the tree plus completeness of the root's junctors."""
    out = _invariants(s, ROOT, path)
    out += _completeness(s, s, path, path)
    return fe.sort_by_error(out)


def _invariants(s: Schema, lvl: str, path: str) -> list[Cause]:
    out: list[Cause] = []
    typ = s.get("type") or ""
    items = s.get("items")
    if typ == "array" and not isinstance(items, dict):
        out.append(fe.required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        out += _invariants(items, ITEM, f"{path}.items")
    props: dict[str, Schema] = s.get("properties") or {}
    for name in sorted(props):
        out += _invariants(props[name], FIELD, key(f"{path}.properties", name))
    additional = s.get("additionalProperties")
    if additional is not None:
        if lvl == ROOT:
            out.append(fe.forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(additional, dict):
            out += _invariants(additional, FIELD, f"{path}.additionalProperties")
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        out.append(
            fe.invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        out.append(
            fe.invalid(
                f"{path}.x-kubernetes-embedded-resource",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    out += _value_validation(s, _is_int_or_string_any_of(s), _is_int_or_string_all_of(s), lvl, path)
    check_metadata = lvl == ROOT or embedded
    if embedded and typ != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        out.append(
            fe.required(f"{path}.type", detail) if not typ else fe.invalid(f"{path}.type", typ, detail)
        )
    elif not typ and not int_or_string and not preserve:
        where = {
            ROOT: "must not be empty at the root",
            ITEM: "must not be empty for specified array items",
            FIELD: "must not be empty for specified object fields",
        }[lvl]
        out.append(fe.required(f"{path}.type", where))
    if embedded and additional is not None:
        out.append(
            fe.forbidden(
                f"{path}.additionalProperties", "must not be used if x-kubernetes-embedded-resource is set"
            )
        )
    if lvl == ROOT and typ and typ != "object":
        out.append(fe.invalid(f"{path}.type", typ, "must be object at the root"))
    for meta_field in ("kind", "apiVersion"):
        if meta_field in props and check_metadata and (props[meta_field].get("type") or "") != "string":
            at = f"{key(f'{path}.properties', meta_field)}.type"
            out.append(fe.invalid(at, props[meta_field].get("type") or "", "must be string"))
    if "metadata" in props:
        out += _metadata(props["metadata"], check_metadata, lvl, key(f"{path}.properties", "metadata"))
    if embedded and not preserve and not props:
        out.append(
            fe.required(
                f"{path}.properties",
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )
    return out


def _metadata(s: Schema, check_metadata: bool, lvl: str, path: str) -> list[Cause]:
    """`validateStructuralMetadataInvariants`: at the root, metadata may only restrict name/generateName."""
    out: list[Cause] = []
    if check_metadata and s.get("type") != "object":
        out.append(fe.invalid(f"{path}.type", s.get("type") or "", "must be object"))
    if lvl == ROOT:
        rest = dict(s)
        props = rest.get("properties") or {}
        if set(props) in ({"name"}, {"generateName"}, {"name", "generateName"}):
            rest.pop("properties")
        for allowed in ("type", "default"):
            rest.pop(allowed, None)
        if any(v not in (None, False, "", [], {}) for v in rest.values()):
            out.append(
                fe.forbidden(
                    path,
                    "must not specify anything other than name and generateName, but metadata is "
                    "implicitly specified",
                )
            )
    return out


def _is_int_or_string_any_of(s: Schema) -> bool:
    return s.get("anyOf") == _INT_OR_STRING_ANY_OF


def _is_int_or_string_all_of(s: Schema) -> bool:
    all_of = s.get("allOf") or []
    return bool(all_of) and isinstance(all_of[0], dict) and all_of[0].get("anyOf") == _INT_OR_STRING_ANY_OF


def _value_validation(
    s: Schema, skip_any_of: bool, skip_first_all_of_any_of: bool, lvl: str, path: str
) -> list[Cause]:
    out: list[Cause] = []
    if not skip_any_of:
        for i, clause in enumerate(s.get("anyOf") or []):
            out += _nested(clause, False, lvl, f"{path}.anyOf[{i}]")
    for i, clause in enumerate(s.get("allOf") or []):
        out += _nested(clause, skip_first_all_of_any_of and i == 0, lvl, f"{path}.allOf[{i}]")
    for i, clause in enumerate(s.get("oneOf") or []):
        out += _nested(clause, False, lvl, f"{path}.oneOf[{i}]")
    if isinstance(s.get("not"), dict):
        out += _nested(s["not"], False, lvl, f"{path}.not")
    pattern = s.get("pattern")
    if pattern:
        try:
            re.compile(pattern)
        except re.error as err:
            out.append(
                fe.invalid(
                    f"{path}.pattern",
                    pattern,
                    f"must be a valid regular expression, but isn't: error parsing regexp: {err}",
                )
            )
    return out


_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested(v: Any, skip_any_of: bool, lvl: str, path: str) -> list[Cause]:
    """`validateNestedValueValidation`: inside allOf/anyOf/oneOf/not only value validations."""
    if not isinstance(v, dict):
        return []
    out = _value_validation(v, skip_any_of, False, lvl, path)
    if isinstance(v.get("items"), dict):
        out += _nested(v["items"], False, lvl, f"{path}.items")
    props = v.get("properties") or {}
    for name in sorted(props):
        out += _nested(props[name], False, FIELD, key(f"{path}.properties", name))
    forbidden = dict(_NESTED_FORBIDDEN)
    if v.get("type"):
        out.append(fe.forbidden(f"{path}.type", forbidden["type"]))
    additional = v.get("additionalProperties")
    if isinstance(additional, dict) or additional is True:
        out.append(fe.forbidden(f"{path}.additionalProperties", "must be undefined to be structural"))
    if has_default(v):
        out.append(fe.forbidden(f"{path}.default", "must be undefined to be structural"))
    for field in ("title", "description", "nullable", "x-kubernetes-preserve-unknown-fields"):
        if v.get(field):
            out.append(fe.forbidden(f"{path}.{field}", forbidden[field]))
    for field in (
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
        "x-kubernetes-list-map-keys",
    ):
        if v.get(field):
            out.append(fe.forbidden(f"{path}.{field}", forbidden[field]))
    for field in ("x-kubernetes-list-type", "x-kubernetes-map-type"):
        if v.get(field) is not None:
            out.append(fe.forbidden(f"{path}.{field}", "must be undefined to be structural"))
    if v.get("x-kubernetes-validations"):
        out.append(fe.forbidden(f"{path}.x-kubernetes-validations", forbidden["x-kubernetes-validations"]))
    if "metadata" in props:
        out.append(
            fe.forbidden(key(f"{path}.properties", "metadata"), "must not be specified in a nested context")
        )
    return out


def _completeness(v: Any, s: Any, s_path: str, v_path: str) -> list[Cause]:
    """`validateValueValidationCompleteness`: what junctors constrain must be specified structurally."""
    if not isinstance(v, dict):
        return []
    out: list[Cause] = []
    clauses = [(v.get("not"), f"{v_path}.not")]
    for junctor in ("allOf", "anyOf", "oneOf"):
        clauses += [(c, f"{v_path}.{junctor}[{i}]") for i, c in enumerate(v.get(junctor) or [])]
    for clause, at in clauses:
        out += _nested_completeness(clause, s, s_path, at)
    return out


def _nested_completeness(v: Any, s: Any, s_path: str, v_path: str) -> list[Cause]:
    if not isinstance(v, dict):
        return []
    if not isinstance(s, dict):
        return [fe.required(s_path, f"because it is defined in {v_path}")]
    out = _completeness(v, s, s_path, v_path)
    if isinstance(v.get("items"), dict):
        out += _nested_completeness(v["items"], s.get("items"), f"{s_path}.items", f"{v_path}.items")
    s_props = s.get("properties") or {}
    for name, clause in sorted((v.get("properties") or {}).items()):
        at_s, at_v = key(f"{s_path}.properties", name), key(f"{v_path}.properties", name)
        if name not in s_props:
            out.append(fe.required(at_s, f"because it is defined in {at_v}"))
        else:
            out += _nested_completeness(clause, s_props[name], at_s, at_v)
    return out


def default_causes(s: Schema, path: str) -> list[Cause]:
    """`ValidateDefaults(..., isResourceRoot=true, requirePrunedDefaults=true)`."""
    return _defaults(s, path, root=True)


def _defaults(s: Schema, path: str, root: bool) -> list[Cause]:
    out: list[Cause] = []
    embedded = root or bool(s.get("x-kubernetes-embedded-resource"))
    if has_default(s):
        value = s["default"]
        pruned = crschema.prune(copy.deepcopy(value), s, root=embedded)
        if pruned != value:
            out.append(fe.invalid(f"{path}.default", value, "must not have unknown fields"))
        out += crschema.validate(value, s, f"{path}.default")
    items = s.get("items")
    if isinstance(items, dict):
        out += _defaults(items, f"{path}.items", False)
    props = s.get("properties") or {}
    for name in sorted(props):
        out += _defaults(props[name], key(f"{path}.properties", name), False)
    return out
