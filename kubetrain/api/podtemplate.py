"""Pod templates: the upstream PodTemplateSpec schema check and the framework-container rule.

The schema is the official Kubernetes OpenAPI schema, converted to JSON Schema and shipped by the
`kubernetes-validate` package (the "strict" flavour: unknown fields are errors). Two things the
OpenAPI schema does not express are added to the loaded copy: the enum values of the common pod
and container enums, and the syntax of resource quantities (`500m`, `16Gi`, `1e3`).

Validation results are cached by template content: a webhook sees the same few templates over and
over. The cache (`TEMPLATE_CACHE`) is bounded by bytes (`TEMPLATE_CACHE_BYTES`, each entry charged
its key plus its messages), not by entries, and a template over `TEMPLATE_CACHE_ENTRY_BYTES` is not
kept: whole templates are the keys, and a hostile client can send many distinct large ones. The
work per template is bounded too: the schema check stops after `MAX_TEMPLATE_ERRORS` problems
(one more entry says so), so a container with 100,000 unknown fields costs as much as one with 100.
The cache key (`template_key`) is the template's compact JSON from orjson (equal JSON data
gives equal bytes): about 6x cheaper than the `marshal` key before it, which was itself 6x
cheaper than `json.dumps(sort_keys=True)`; the key was the largest cost of validating a large
job whose templates were already cached. A template is only rebuilt from its key (JSON, so it is
validated exactly as the API server would receive it) when the cache misses.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema
import orjson
from jsonschema.exceptions import ValidationError

from kubetrain.api.errors import QUOTE, ErrorKind, json_type
from kubetrain.api.quantity import QUANTITY_EXAMPLES, QUANTITY_PATTERN
from kubetrain.api.sizedcache import SizedLRU

# The Kubernetes version whose PodTemplateSpec schema templates are checked against.
KUBERNETES_SCHEMA_VERSION = "1.34.0"
_SCHEMA_DIR = f"kubernetes-json-schema/v{KUBERNETES_SCHEMA_VERSION}-local-strict"
_DEFS = "io.k8s.api.core.v1."
_QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING_DEF = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

# Enum values of the pod API that the OpenAPI schema leaves as plain strings.
_ENUMS: dict[str, dict[str, tuple[str, ...]]] = {
    "PodSpec": {
        "restartPolicy": ("Always", "OnFailure", "Never"),
        "dnsPolicy": ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"),
        "preemptionPolicy": ("PreemptLowerPriority", "Never"),
    },
    "Container": {
        "imagePullPolicy": ("Always", "IfNotPresent", "Never"),
        "terminationMessagePolicy": ("File", "FallbackToLogsOnError"),
    },
    "EphemeralContainer": {
        "imagePullPolicy": ("Always", "IfNotPresent", "Never"),
        "terminationMessagePolicy": ("File", "FallbackToLogsOnError"),
    },
    "ContainerPort": {"protocol": ("TCP", "UDP", "SCTP")},
    "Toleration": {
        "operator": ("Exists", "Equal"),
        "effect": ("NoSchedule", "PreferNoSchedule", "NoExecute"),
    },
    "EnvVarSource": {},
}


def _load(name: str) -> dict[str, Any]:
    ref = resources.files("kubernetes_validate").joinpath(f"{_SCHEMA_DIR}/{name}")
    data: dict[str, Any] = json.loads(ref.read_text(encoding="utf-8"))
    return data


def _rewrite_refs(node: Any) -> Any:
    """Point `/api/_definitions.json#/$defs/X` references at the local `#/$defs/X`."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and "#/$defs/" in value:
                out[key] = "#/$defs/" + value.split("#/$defs/", 1)[1]
            else:
                out[key] = _rewrite_refs(value)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


@lru_cache(maxsize=1)
def pod_template_schema() -> dict[str, Any]:
    """The self-contained JSON Schema of a PodTemplateSpec (with kubetrain's additions)."""
    defs: dict[str, Any] = _load("_definitions.json")["$defs"]  # freshly parsed: ours to change
    defs[_QUANTITY_DEF] = {
        "x-kubetrain-kind": "quantity",
        "anyOf": [{"type": "string", "pattern": QUANTITY_PATTERN}, {"type": ["number", "null"]}],
    }
    defs[_INT_OR_STRING_DEF] = {"x-kubetrain-kind": "int-or-string", "type": ["integer", "string", "null"]}
    for definition, fields in _ENUMS.items():
        props = defs[_DEFS + definition].get("properties", {})
        for field, values in fields.items():
            props[field] = {**props[field], "enum": [*values, None]}
    root: dict[str, Any] = _rewrite_refs(_load("podtemplatespec-v1.json"))
    root.pop("$id", None)
    root["$defs"] = _rewrite_refs(defs)
    return root


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    schema = pod_template_schema()
    return jsonschema.Draft202012Validator(schema)


def warm() -> None:
    """Read and build the schema and its validator now, and run it once (~0.2-0.3 s of CPU), so
    that the first job validated does not pay for it: the operator calls this at start-up, off
    its event loop, and its first large job's pods are no longer that much later."""
    list(_validator().iter_errors({"spec": {"containers": [{"name": "c", "image": "i"}]}}))


# ---------------------------------------------------------------------------------------------
# template → errors


NOT_JSON = "must be a JSON object"


def template_key(template: Any) -> bytes | str | None:
    """A hashable key equal for equal templates (same keys in the same order, same JSON types);
    None when the template is not JSON data.

    orjson's compact JSON bytes: ~6x cheaper than marshal on a large template, and the key is the
    JSON text kubectl would send (a YAML date becomes its string, as kubectl sends it).
    """
    try:
        return orjson.dumps(template)
    except TypeError:
        pass  # e.g. non-string keys or integers beyond 64 bits: fall back to the stdlib
    try:
        return json.dumps(template, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def template_from_key(key: bytes | str) -> Any:
    """The JSON data a `template_key` stands for."""
    if isinstance(key, str):
        return json.loads(key)
    return orjson.loads(key)


# At most this many schema problems are computed per template; the rest are summed up in one.
MAX_TEMPLATE_ERRORS = 100
TOO_MANY_ERRORS = f"too many problems: only the first {MAX_TEMPLATE_ERRORS} are reported"
# The per-template results cache (see the module docstring).
TEMPLATE_CACHE_BYTES = 16 * 1024 * 1024
TEMPLATE_CACHE_ENTRY_BYTES = 1024 * 1024
TEMPLATE_CACHE: SizedLRU[tuple[bytes | str, str], Any] = SizedLRU(
    max_bytes=TEMPLATE_CACHE_BYTES, max_entry_bytes=TEMPLATE_CACHE_ENTRY_BYTES
)


def template_schema_errors(key: bytes | str) -> tuple[tuple[str, ErrorKind, str], ...] | None:
    """Schema problems (relative path, kind, message) of the template `key` stands for, sorted
    by path, at most MAX_TEMPLATE_ERRORS (plus one saying there are more); None when it is not
    JSON data."""
    try:
        template = template_from_key(key)
    except (TypeError, ValueError, RecursionError):
        return None
    return schema_errors_of(template)


def schema_errors_of(template: Any) -> tuple[tuple[str, ErrorKind, str], ...]:
    """`template_schema_errors` of template data already decoded from its key."""
    found: list[tuple[str, ErrorKind, str]] = []
    for err in _validator().iter_errors(template):
        found.extend(_convert(err, MAX_TEMPLATE_ERRORS + 1 - len(found)))
        if len(found) > MAX_TEMPLATE_ERRORS:
            del found[MAX_TEMPLATE_ERRORS:]
            found.sort(key=lambda e: e[0])
            return tuple(dict.fromkeys([("", ErrorKind.INVALID, TOO_MANY_ERRORS), *found]))
    found.sort(key=lambda e: e[0])
    return tuple(dict.fromkeys(found))


def _instance_path(err: ValidationError) -> str:
    """`.spec.containers[0].resources.limits[cpu]`: properties with dots, items/map keys in []."""
    steps = list(_descents(list(err.absolute_schema_path)))
    out = ""
    for i, part in enumerate(err.absolute_path):
        how = steps[i] if i < len(steps) else ("item" if isinstance(part, int) else "prop")
        if how == "prop":
            out += f".{part}"
        else:
            out += f"[{part}]"
    return out


def _descents(schema_path: list[Any]) -> Iterator[str]:
    """For each step into the instance, whether it went through properties, a map or items."""
    i = 0
    while i < len(schema_path):
        token = schema_path[i]
        if token == "properties" and i + 1 < len(schema_path):
            yield "prop"
            i += 2
            continue
        if token in ("additionalProperties", "patternProperties"):
            yield "key"
            i += 2 if token == "patternProperties" else 1
            continue
        if token in ("items", "prefixItems"):
            yield "item"
            i += 2 if token == "prefixItems" else 1
            continue
        i += 1


_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "an object",
    "array": "a list",
}


def _convert(err: ValidationError, budget: int) -> list[tuple[str, ErrorKind, str]]:
    """The problems one jsonschema error stands for (at most `budget` of them)."""
    path = _instance_path(err)
    schema: dict[str, Any] = err.schema if isinstance(err.schema, dict) else {}
    marker = schema.get("x-kubetrain-kind")
    if marker == "quantity":
        return [
            (
                path,
                ErrorKind.INVALID,
                f"{QUOTE.encode(err.instance)} is not a valid quantity: use e.g. {QUANTITY_EXAMPLES}",
            )
        ]
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = sorted(schema.get("properties", {}))
        out: list[tuple[str, ErrorKind, str]] = []
        for name in err.instance:
            if name in known:
                continue
            if len(out) >= budget:
                break
            close = difflib.get_close_matches(name, known, n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else f"; valid fields are: {', '.join(known)}"
            out.append((f"{path}.{name}", ErrorKind.INVALID, f"unknown field {QUOTE.encode(name)}{hint}"))
        return out
    expected: Any = err.validator_value
    if err.validator == "required":
        missing = [n for n in expected if isinstance(err.instance, dict) and n not in err.instance]
        return [(f"{path}.{n}", ErrorKind.REQUIRED, "required field is missing") for n in missing]
    if err.validator == "enum":
        valid = ", ".join(f'"{v}"' for v in expected if v is not None)
        return [
            (
                path,
                ErrorKind.NOT_SUPPORTED,
                f"{QUOTE.encode(err.instance)} is not supported: must be one of {valid}",
            )
        ]
    if err.validator == "type":
        wanted = expected if isinstance(expected, list) else [expected]
        words = " or ".join(_TYPE_WORDS.get(str(t), str(t)) for t in wanted if t != "null")
        return [(path, ErrorKind.INVALID, f"must be {words}, got {json_type(err.instance)}")]
    return [(path, ErrorKind.INVALID, err.message)]


# ---------------------------------------------------------------------------------------------
# the framework container


def framework_container_index(template: Any, container_name: str) -> int | None:
    """Index of the framework container: the one named `container_name`, else container 0.

    None when the template has no containers (validation reports that).
    """
    return container_index(containers_of(template), container_name)


def container_index(containers: list[Any], container_name: str) -> int | None:
    """`framework_container_index` of a template whose `containers_of` is `containers`."""
    for i, container in enumerate(containers):
        if isinstance(container, dict) and container.get("name") == container_name:
            return i
    return 0 if containers else None


def containers_of(template: Any) -> list[Any]:
    if not isinstance(template, dict):
        return []
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return []
    containers = spec.get("containers")
    return containers if isinstance(containers, list) else []


def default_container_warning(path: str, container: Any, container_name: str) -> str:
    """The warning given when container 0 stands in for the framework container (same text from
    the mutating and the validating webhook, so the API server shows it once)."""
    shown = container.get("name") if isinstance(container, dict) else None
    return (
        f'{path}: no container is named "{container_name}"; container 0 ({QUOTE.encode(shown)}) is used '
        f'as the {container_name} container (name it "{container_name}" to make this explicit)'
    )
