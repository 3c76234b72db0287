"""Reading YAML manifests as kubectl reads them: one loader for every place kubetrain reads YAML.

kubectl (sigs.k8s.io/yaml) turns YAML into JSON before anything sees it, so an unquoted
`2024-01-01` or `2024-01-01T10:00:00Z` — an annotation, a label value, `kubectl get -o yaml`'s
`creationTimestamp` — arrives at the API server as the string it was written as. PyYAML's safe
loader would make it a `datetime.date`/`datetime`, which no job field accepts and which JSON
cannot encode. `ManifestLoader` keeps such scalars as strings; everything else is the safe
loader's YAML.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from kubetrain.api.errors import FieldError, invalid, json_type

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class ManifestLoader(yaml.SafeLoader):
    """The safe loader without YAML 1.1 timestamps: a date-like scalar stays a string."""


ManifestLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _timestamp_as_string(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    # An explicit `!!timestamp` tag: still the text that was written, as kubectl sends it.
    return loader.construct_scalar(node)  # type: ignore[arg-type]


ManifestLoader.add_constructor(_TIMESTAMP_TAG, _timestamp_as_string)


def load_all(text: str | bytes) -> list[Any]:
    """Every document of a YAML stream (empty documents are None); raises yaml.YAMLError."""
    return list(yaml.load_all(text, Loader=ManifestLoader))  # a SafeLoader subclass: safe


def load(text: str | bytes) -> Any:
    """The single document of a YAML text; raises yaml.YAMLError."""
    return yaml.load(text, Loader=ManifestLoader)  # a SafeLoader subclass: safe


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: `line L, column C: problem`."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return str(problem)


def metadata_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """What the API server's decoding of `metadata` (an ObjectMeta) refuses before any admission
    sees the object: metadata that is not a mapping, labels or annotations that are not maps of
    string to string (an unquoted `true`, `8` or `1.5` in YAML is not a string). A file read by
    `kubetrain validate` has not been through that decoding; webhooks and the controller only
    ever get objects that have."""
    metadata = obj.get("metadata")
    if metadata is None:
        return []
    if not isinstance(metadata, Mapping):
        return [invalid("metadata", f"must be a mapping, got {json_type(metadata)}")]
    errors: list[FieldError] = []
    for field in ("labels", "annotations"):
        value = metadata.get(field)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            errors.append(
                invalid(f"metadata.{field}", f"must be a map of string to string, got {json_type(value)}")
            )
            continue
        errors.extend(
            invalid(f"metadata.{field}.{key}", f"must be a string, got {json_type(item)} (quote it in YAML)")
            for key, item in value.items()
            if not isinstance(item, str)
        )
    return errors
