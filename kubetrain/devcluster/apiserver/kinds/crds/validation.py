"""CustomResourceDefinition validation as apiextensions-apiserver does it, for apiextensions.k8s.io/v1.

A port of k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go:
`ValidateCustomResourceDefinition` / `ValidateCustomResourceDefinitionUpdate` →
`validateCustomResourceDefinitionSpec` (group, scope, versions, names, schemas, subresources,
printer columns, conversion), `ValidateCustomResourceDefinitionStoredVersions`,
`validateAPIApproval` and `validatePreserveUnknownFields`. Schemas: `schema.py` and
`structural.py`.

Field paths are those of the internal type, as kube-apiserver reports them: the v1 → internal
conversion (`Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_CustomResourceDefinitionSpec`)
moves a schema, subresources or printer columns that all versions share to the top level, so a
single-version CRD's schema errors read `spec.validation.openAPIV3Schema...`, its columns
`spec.additionalPrinterColumns[0]...`; a webhook's client config is `spec.conversion.webhookClientConfig`.

Not covered: compiling and costing CEL beyond parsing (`x-kubernetes-validations`: a rule or
messageExpression that does not parse is refused, schema.py; celrules.py compiles the rules when
the CRD is served and skips those it cannot evaluate), `selectableFields`, the
PEM check of a conversion webhook's caBundle, and the update-time leniency upstream grants a CRD
whose stored schema already broke a rule (devcluster refuses such CRDs at create).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe
from kubetrain.devcluster.apiserver.kinds.crds import lifecycle
from kubetrain.devcluster.apiserver.kinds.crds.conversion import conversion_causes, enum_causes
from kubetrain.devcluster.apiserver.kinds.crds.schema import (
    Ssv,
    has_default,
    openapi_schema_causes,
    schema_has,
)
from kubetrain.devcluster.apiserver.kinds.crds.structural import (
    conversion_error,
    default_causes,
    structural_causes,
)

_PER_VERSION = (
    ("schema", "validation"),
    ("subresources", "subresources"),
    ("additionalPrinterColumns", "additionalPrinterColumns"),
)
_COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
_COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"]
_ROOT_WITH_STATUS = {
    "description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "required",
    "items", "properties", "externalDocs", "example", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
}  # fmt: skip
_ROOT_WITH_STATUS_GO = (
    "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength "
    "Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example "
    "XPreserveUnknownFields XValidations]"
)
_VERSIONS_VALUE = fe.Go("[]apiextensions.CustomResourceDefinitionVersion{...}")


def internal_spec(spec: Obj) -> Obj:
    """The v1 → internal conversion: per-version fields all versions share move to the top level."""
    versions = [dict(v) if isinstance(v, dict) else {} for v in spec.get("versions") or []]
    out = {k: v for k, v in spec.items() if k != "versions"}
    out["versions"] = versions
    if not versions:
        return out
    for field, top in _PER_VERSION:
        values = [
            v.get(field) or None if field == "additionalPrinterColumns" else v.get(field) for v in versions
        ]
        if all(value == values[0] for value in values):
            if values[0] is not None:
                out[top] = values[0]
            for v in versions:
                v.pop(field, None)
    return out


def crd_causes(crd: Obj, old: Obj | None) -> list[Cause]:
    """All violations of a CRD being created (`old` None) or updated, in upstream's order."""
    spec = fe.mapping(crd.get("spec"))
    internal = internal_spec(spec)
    causes = _spec(internal)  # the name's rule: namerules.py
    if old is not None:
        causes += lifecycle.immutable_causes(spec, old.get("spec") or {})
    stored = (crd.get("status") or {}).get("storedVersions") or []
    causes += lifecycle.stored_versions_causes(stored, internal["versions"])
    causes += lifecycle.api_approval_causes(crd, old)
    causes += lifecycle.preserve_unknown_fields_causes(crd, old)
    return causes


def _spec(spec: Obj) -> list[Cause]:
    out: list[Cause] = []
    group = spec.get("group") or ""
    if not group:
        out.append(fe.required("spec.group"))
    elif errs := fe.dns1123_subdomain_errors(group):
        out.append(fe.invalid("spec.group", group, ",".join(errs)))
    elif len(group.split(".")) < 2:
        out.append(fe.invalid("spec.group", group, "should be a domain with at least one dot"))
    out += enum_causes("spec.scope", spec.get("scope") or "", ["Cluster", "Namespaced"])
    versions: list[Obj] = spec["versions"]
    top_schema = (spec.get("validation") or {}).get("openAPIV3Schema")
    if top_schema is None:
        for i, v in enumerate(versions):
            if (v.get("schema") or {}).get("openAPIV3Schema") is None:
                out.append(fe.required(f"spec.versions[{i}].schema.openAPIV3Schema"))
    preserve = spec.get("preserveUnknownFields") is True
    if _any_schema(spec, has_default) and preserve:
        out.append(
            fe.invalid(
                "spec.preserveUnknownFields", True, "must be false in order to use defaults in the schema"
            )
        )
    per_version_subresources = any(v.get("subresources") is not None for v in versions)
    names_seen: set[str] = set()
    unique, storage = True, 0
    for i, v in enumerate(versions):
        storage += 1 if v.get("storage") else 0
        vname = v.get("name") or ""
        unique = unique and vname not in names_seen
        names_seen.add(vname)
        if errs := fe.dns1035_label_errors(vname):
            out.append(fe.invalid(f"spec.versions[{i}].name", vname, ",".join(errs)))
        subresources = v.get("subresources") if per_version_subresources else spec.get("subresources")
        out += _version(v, f"spec.versions[{i}]", _status_enabled(subresources))
    if not unique:
        out.append(fe.invalid("spec.versions", _VERSIONS_VALUE, "must contain unique version names"))
    if storage != 1:
        out.append(
            fe.invalid(
                "spec.versions", _VERSIONS_VALUE, "must have exactly one version marked as storage version"
            )
        )
    if versions and (errs := fe.dns1035_label_errors(versions[0].get("name") or "")):
        out.append(fe.invalid("spec.version", versions[0].get("name") or "", ",".join(errs)))
    names = fe.mapping(spec.get("names"))
    for field in ("plural", "singular", "kind", "listKind"):
        if not names.get(field):
            out.append(fe.required(f"spec.names.{field}"))
    out += names_causes(names, "spec.names")
    any_status = _status_enabled(spec.get("subresources")) or any(
        _status_enabled(v.get("subresources")) for v in versions
    )
    out += validation_causes(spec.get("validation"), "spec.validation", any_status)
    out += subresources_causes(spec.get("subresources"), "spec.subresources")
    for i, col in enumerate(spec.get("additionalPrinterColumns") or []):
        out += column_causes(col, f"spec.additionalPrinterColumns[{i}]")
    conversion = spec.get("conversion") or {}
    if conversion.get("strategy", "None") != "None" and preserve:
        out.append(
            fe.invalid(
                "spec.conversion.strategy",
                conversion.get("strategy"),
                "must be None if spec.preserveUnknownFields is true",
            )
        )
    out += conversion_causes(conversion, "spec.conversion")
    return out


def _status_enabled(subresources: Any) -> bool:
    return isinstance(subresources, dict) and subresources.get("status") is not None


def _any_schema(spec: Obj, pred: Any) -> bool:
    """`HasSchemaWith`."""
    schemas = [(spec.get("validation") or {}).get("openAPIV3Schema")]
    schemas += [(v.get("schema") or {}).get("openAPIV3Schema") for v in spec["versions"]]
    return any(schema_has(s, pred) for s in schemas)


def _version(v: Obj, path: str, status_enabled: bool) -> list[Cause]:
    """`validateCustomResourceDefinitionVersion`."""
    out = [fe.invalid(f"{path}.deprecationWarning", v.get("deprecationWarning"), e) for e in _deprecation(v)]
    out += validation_causes(v.get("schema"), f"{path}.schema", status_enabled)
    out += subresources_causes(v.get("subresources"), f"{path}.subresources")
    for i, col in enumerate(v.get("additionalPrinterColumns") or []):
        out += column_causes(col, f"{path}.additionalPrinterColumns[{i}]")
    return out


def _deprecation(v: Obj) -> list[str]:
    """`validateDeprecationWarning`."""
    warning = v.get("deprecationWarning")
    if not v.get("deprecated") and warning is not None:
        return ["can only be set for deprecated versions"]
    if warning is None:
        return []
    errs = []
    if len(warning.encode()) > 256:
        errs.append("must be <= 256 characters long")
    if not warning:
        errs.append("must not be an empty string")
    for i, ch in enumerate(warning):
        if not ch.isprintable() or unicodedata.category(ch) == "Cc":
            errs.append(
                f"must only contain printable UTF-8 characters; non-printable character found at index {i}"
            )
            break
    return errs


def validation_causes(validation: Any, path: str, status_enabled: bool) -> list[Cause]:
    """`validateCustomResourceDefinitionValidation` for v1: structural schemas, pruned defaults."""
    if not isinstance(validation, dict) or not isinstance(validation.get("openAPIV3Schema"), dict):
        return []
    schema: Obj = validation["openAPIV3Schema"]
    at = f"{path}.openAPIV3Schema"
    out: list[Cause] = []
    if status_enabled:
        if "type" in schema and schema.get("type") not in ("object", None, ""):
            out.append(
                fe.invalid(
                    f"{at}.type",
                    schema["type"],
                    'only "object" is allowed as the type at the root of the schema if the status '
                    "subresource is enabled",
                )
            )
        elif any(k not in _ROOT_WITH_STATUS and v not in (None, False, "") for k, v in schema.items()):
            out.append(
                fe.invalid(
                    at,
                    fe.Go("apiextensions.JSONSchemaProps{...}"),
                    f"only {_ROOT_WITH_STATUS_GO} fields are allowed at the root of the schema if the "
                    "status subresource is enabled",
                )
            )
    if schema.get("nullable"):
        out.append(fe.forbidden(f"{at}.nullable", "nullable cannot be true at the root"))
    init_errors: list[Cause] = []
    cel: list[Cause] | None = None  # upstream's celContext: only over a valid structural schema
    if (err := conversion_error(schema)) is not None:
        init_errors.append(fe.invalid(at, "", err))
    elif structural := structural_causes(schema, at):
        out += structural
    elif defaults := default_causes(schema, at):
        out += defaults
    else:
        cel = []
    out += openapi_schema_causes(schema, at, Ssv(), is_root=True, cel=cel)
    out += cel or []  # `AllErrors()`: the schema errors, then the CEL ones
    if not out:
        out += init_errors
    return out


def subresources_causes(subresources: Any, path: str) -> list[Cause]:
    """`ValidateCustomResourceDefinitionSubresources`: the scale subresource's JSON paths."""
    scale = subresources.get("scale") if isinstance(subresources, dict) else None
    if not isinstance(scale, dict):
        return []
    out: list[Cause] = []
    for field, under in (("specReplicasPath", "spec"), ("statusReplicasPath", "status")):
        value = scale.get(field) or ""
        at = f"{path}.scale.{field}"
        if not value:
            out.append(fe.required(at))
        elif errs := simple_json_path_causes(value, at):
            out += errs
        elif not value.startswith(f".{under}."):
            out.append(fe.invalid(at, value, f"should be a json path under .{under}"))
    selector = scale.get("labelSelectorPath") or ""
    if selector:
        at = f"{path}.scale.labelSelectorPath"
        if errs := simple_json_path_causes(selector, at):
            out += errs
        elif not selector.startswith((".spec.", ".status.")):
            out.append(fe.invalid(at, selector, "should be a json path under either .spec or .status"))
    return out


def simple_json_path_causes(value: str, path: str) -> list[Cause]:
    """`validateSimpleJSONPath`."""
    if not value:
        return [fe.invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [fe.invalid(path, value, "must be a simple json path starting with .")]
    return []


def column_causes(col: Any, path: str) -> list[Cause]:
    """`ValidateCustomResourceColumnDefinition` (upstream names the v1 `jsonPath` field `JSONPath`)."""
    col = col if isinstance(col, dict) else {}
    out: list[Cause] = []
    if not col.get("name"):
        out.append(fe.required(f"{path}.name"))
    typ = col.get("type") or ""
    types = f"must be one of {','.join(_COLUMN_TYPES)}"
    if not typ:
        out.append(fe.required(f"{path}.type", types))
    elif typ not in _COLUMN_TYPES:
        out.append(fe.invalid(f"{path}.type", typ, types))
    fmt = col.get("format") or ""
    if fmt and fmt not in _COLUMN_FORMATS:
        out.append(fe.invalid(f"{path}.format", fmt, f"must be one of {','.join(_COLUMN_FORMATS)}"))
    json_path = col.get("jsonPath") or ""
    if not json_path:
        out.append(fe.required(f"{path}.JSONPath"))
    else:
        out += simple_json_path_causes(json_path, f"{path}.JSONPath")
    return out


def names_causes(names: Obj, path: str) -> list[Cause]:
    """`ValidateCustomResourceDefinitionNames`."""
    out: list[Cause] = []
    for field in ("plural", "singular"):
        value = names.get(field) or ""
        if value and (errs := fe.dns1035_label_errors(value)):
            out.append(fe.invalid(f"{path}.{field}", value, ",".join(errs)))
    for field in ("kind", "listKind"):
        value = names.get(field) or ""
        if value and (errs := fe.dns1035_label_errors(value.lower())):
            out.append(
                fe.invalid(
                    f"{path}.{field}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(errs),
                )
            )
    for i, short in enumerate(names.get("shortNames") or []):
        if errs := fe.dns1035_label_errors(short):
            out.append(fe.invalid(f"{path}.shortNames[{i}]", short, ",".join(errs)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        out.append(fe.invalid(f"{path}.listKind", names["listKind"], "kind and listKind may not be the same"))
    for i, category in enumerate(names.get("categories") or []):
        if errs := fe.dns1035_label_errors(category):
            out.append(fe.invalid(f"{path}.categories[{i}]", category, ",".join(errs)))
    return out
