"""The per-node rules of a CRD's OpenAPI v3 schema, as apiextensions-apiserver checks them.

A port of `ValidateCustomResourceDefinitionOpenAPISchema` and `specStandardValidatorV3.validate`
(k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go), with the
x-kubernetes-list-type / list-map-keys / map-type rules and `validateMapListKeysMapSet`. Upstream
walks `properties` in Go map order (random); this walks them sorted.

`x-kubernetes-validations` rules get the static checks (rule present, message without line
breaks, reason supported, fieldPath non-empty) and, where the structural schema is valid and
no schema error lies at or below the node, a rule or messageExpression that does not parse as
CEL is refused (rulechecks.py); type checking, libraries and cost are not judged here
(celrules.py compiles the rules when the CRD is served and skips those it cannot evaluate).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe
from kubetrain.devcluster.apiserver.kinds.crds import rulechecks

Schema = dict[str, Any]

OPENAPI_V3_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
_META_FIELDS = ("metadata", "kind", "apiVersion")


@dataclass(frozen=True)
class Ssv:
    """`specStandardValidatorV3`: what the walk allows at the current node."""

    allow_defaults: bool = True
    disallow_defaults_reason: str = ""
    inside_resource_meta: bool = False

    def forbidding_defaults(self, reason: str) -> Ssv:
        return replace(self, allow_defaults=False, disallow_defaults_reason=reason)


def key(path: str, name: str) -> str:
    """`field.Path.Key`: `properties[name]`."""
    return f"{path}[{name}]"


def has_default(s: Schema) -> bool:
    # `default: null` decodes to no default (a nil *JSON).
    return s.get("default") is not None


def items_schema(s: Schema) -> Schema | None:
    items = s.get("items")
    return items if isinstance(items, dict) else None


def _standard(s: Schema, path: str, ssv: Ssv) -> list[Cause]:
    """`specStandardValidatorV3.validate`."""
    out: list[Cause] = []
    typ = s.get("type") or ""
    if typ and typ not in OPENAPI_V3_TYPES:
        out.append(fe.not_supported(f"{path}.type", typ, OPENAPI_V3_TYPES))
    if has_default(s) and not ssv.allow_defaults:
        detail = "must not be set"
        if ssv.disallow_defaults_reason:
            detail += " " + ssv.disallow_defaults_reason
        out.append(fe.forbidden(f"{path}.default", detail))
    if s.get("id"):
        out.append(fe.forbidden(f"{path}.id", "id is not supported"))
    if s.get("additionalItems") is not None:
        out.append(fe.forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if s.get("patternProperties"):
        out.append(fe.forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if s.get("definitions"):
        out.append(fe.forbidden(f"{path}.definitions", "definitions is not supported"))
    if s.get("dependencies") is not None:
        out.append(fe.forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if s.get("$ref") is not None:
        out.append(fe.forbidden(f"{path}.$ref", "$ref is not supported"))
    if typ == "null":
        out.append(fe.forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        out.append(fe.forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if ssv.inside_resource_meta and s.get("x-kubernetes-embedded-resource"):
        out.append(
            fe.forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta")
        )
    return out


def openapi_schema_causes(
    s: Schema | None, path: str, ssv: Ssv, is_root: bool, cel: list[Cause] | None = None
) -> list[Cause]:
    """`ValidateCustomResourceDefinitionOpenAPISchema`: its SchemaErrors, returned, and, where
    `cel` is a list (upstream's non-nil `celContext`), its CELErrors appended to `cel`."""
    if not isinstance(s, dict):
        return []
    out = _standard(s, path, ssv)
    if s.get("uniqueItems"):
        out.append(
            fe.forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    props = s.get("properties") or {}
    additional = s.get("additionalProperties")
    if additional is not None:
        if props and (additional is False or isinstance(additional, dict)):
            out.append(
                fe.forbidden(
                    f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive"
                )
            )
        sub = ssv
        if ssv.inside_resource_meta:
            sub = ssv.forbidding_defaults("inside additionalProperties applying to object metadata")
        if isinstance(additional, dict):
            out += openapi_schema_causes(additional, f"{path}.additionalProperties", sub, False, cel)
    for name in sorted(props):
        sub = ssv
        if (is_root or s.get("x-kubernetes-embedded-resource")) and name in _META_FIELDS:
            sub = replace(sub, inside_resource_meta=True)
            if is_root:
                sub = sub.forbidding_defaults(f"in top-level {name}")
        out += openapi_schema_causes(props[name], key(f"{path}.properties", name), sub, False, cel)
    out += openapi_schema_causes(s.get("not"), f"{path}.not", ssv, False)
    for junctor in ("allOf", "oneOf", "anyOf"):
        for i, clause in enumerate(s.get(junctor) or []):
            out += openapi_schema_causes(clause, f"{path}.{junctor}[{i}]", ssv, False)
    for name in sorted(s.get("definitions") or {}):
        out += openapi_schema_causes(s["definitions"][name], key(f"{path}.definitions", name), ssv, False)
    items = s.get("items")
    if isinstance(items, dict):
        out += openapi_schema_causes(items, f"{path}.items", ssv, False, cel)
    elif isinstance(items, list):
        for i, item in enumerate(items):
            out += openapi_schema_causes(item, f"{path}.items[{i}]", ssv, False, cel)
    for name in sorted(s.get("dependencies") or {}):
        dep = s["dependencies"][name]
        if isinstance(dep, dict):
            out += openapi_schema_causes(dep, key(f"{path}.dependencies", name), ssv, False)
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        out.append(
            fe.invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined")
        )
    out += _map_and_list_types(s, path)
    out += map_list_keys_map_set_causes(s, path)
    out += rulechecks.rule_causes(s, path)
    if cel is not None and not out:  # no schema error at this node or below
        cel += rulechecks.compile_causes(s, path)
    return out


def _type_must_be(s: Schema, path: str, typ: str, because: str) -> Cause:
    detail = f"must be {typ} if {because} is specified"
    if not s.get("type"):
        return fe.required(f"{path}.type", detail)
    return fe.invalid(f"{path}.type", s["type"], detail)


def _map_and_list_types(s: Schema, path: str) -> list[Cause]:
    out: list[Cause] = []
    typ = s.get("type") or ""
    map_type = s.get("x-kubernetes-map-type")
    list_type = s.get("x-kubernetes-list-type")
    map_keys = s.get("x-kubernetes-list-map-keys") or []
    items = items_schema(s)
    if map_type is not None and typ != "object":
        out.append(_type_must_be(s, path, "object", "x-kubernetes-map-type"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        out.append(fe.not_supported(f"{path}.x-kubernetes-map-type", map_type, ["atomic", "granular"]))
    if list_type is not None and typ != "array":
        out.append(_type_must_be(s, path, "array", "x-kubernetes-list-type"))
    elif list_type == "set" and items is not None:
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        item_list_type = items.get("x-kubernetes-list-type")
        if items.get("type") == "array" and item_list_type is not None and item_list_type != "atomic":
            out.append(fe.invalid(f"{path}.items.x-kubernetes-list-type", item_list_type, detail))
        elif items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            # upstream reports the items' list type (nil here) as the value
            out.append(fe.invalid(f"{path}.items.x-kubernetes-map-type", item_list_type, detail))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        out.append(fe.not_supported(f"{path}.x-kubernetes-list-type", list_type, ["atomic", "set", "map"]))
    if map_keys:
        if list_type is None:
            out.append(
                fe.required(
                    f"{path}.x-kubernetes-list-type", "must be map if x-kubernetes-list-map-keys is non-empty"
                )
            )
        elif list_type != "map":
            out.append(
                fe.invalid(
                    f"{path}.x-kubernetes-list-type",
                    list_type,
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
    if list_type == "map":
        out += _list_map_causes(s, path, map_keys)
    return out


def _list_map_causes(s: Schema, path: str, map_keys: list[str]) -> list[Cause]:
    out: list[Cause] = []
    if not map_keys:
        out.append(
            fe.required(
                f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type is map"
            )
        )
    raw_items = s.get("items")
    if raw_items is None:
        out.append(fe.required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
    elif not isinstance(raw_items, dict):
        out.append(
            fe.invalid(
                f"{path}.items",
                fe.Go("&apiextensions.JSONSchemaPropsOrArray{...}"),
                "must only have a single schema if x-kubernetes-list-type is map",
            )
        )
    items = items_schema(s)
    if items is None:
        return out
    item_type = items.get("type") or ""
    if item_type != "object":
        out.append(
            fe.invalid(
                f"{path}.items.type",
                item_type,
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        )
        return out
    item_props = items.get("properties") or {}
    seen: set[str] = set()
    for k in map_keys:
        prop = item_props.get(k)
        if prop is not None:
            if prop.get("type") in ("array", "object"):
                # upstream reports the item's type ("object") as the value
                out.append(
                    fe.invalid(
                        f"{key(f'{path}.items.properties', k)}.type",
                        item_type,
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    )
                )
        else:
            out.append(
                fe.invalid(
                    f"{path}.x-kubernetes-list-map-keys",
                    map_keys,
                    "entries must all be names of item properties",
                )
            )
        if k in seen:
            out.append(
                fe.invalid(
                    f"{path}.x-kubernetes-list-map-keys", map_keys, "must not contain duplicate entries"
                )
            )
        seen.add(k)
    return out


def map_list_keys_map_set_causes(s: Schema, path: str) -> list[Cause]:
    """`validateMapListKeysMapSet`: set/map list items not nullable; map keys required or defaulted."""
    items = items_schema(s)
    list_type = s.get("x-kubernetes-list-type")
    if items is None or list_type not in ("set", "map"):
        return []
    out: list[Cause] = []
    if items.get("nullable"):
        out.append(
            fe.forbidden(
                f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is {list_type}"
            )
        )
    if list_type == "map":
        required = set(items.get("required") or [])
        props = items.get("properties") or {}
        for k in s.get("x-kubernetes-list-map-keys") or []:
            prop = props.get(k)
            if prop is None:
                continue
            at = key(f"{path}.items.properties", k)
            if k not in required and not has_default(prop):
                out.append(
                    fe.required(
                        f"{at}.default",
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be "
                        "a required property",
                    )
                )
            if prop.get("nullable"):
                out.append(
                    fe.forbidden(
                        f"{at}.nullable",
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return out


def schema_has(s: Any, pred: Any) -> bool:
    """`SchemaHas`: whether `pred` holds for `s` or any schema nested in it."""
    if not isinstance(s, dict):
        return False
    if pred(s):
        return True
    items = s.get("items")
    nested: list[Any] = list(items) if isinstance(items, list) else [items]
    for junctor in ("allOf", "anyOf", "oneOf"):
        nested += s.get(junctor) or []
    nested.append(s.get("not"))
    for mapping in ("properties", "patternProperties", "definitions", "dependencies"):
        nested += list((s.get(mapping) or {}).values())
    nested += [s.get("additionalProperties"), s.get("additionalItems")]
    return any(schema_has(n, pred) for n in nested)
