"""Reading YAML manifests as kubectl reads them: one loader for every place kubetrain reads YAML.

kubectl (sigs.k8s.io/yaml) turns YAML into JSON before anything sees it, so an unquoted
`2024-01-01` or `2024-01-01T10:00:00Z` — an annotation, a label value, `kubectl get -o yaml`'s
`creationTimestamp` — arrives at the API server as the string it was written as. PyYAML's safe
loader would make it a `datetime.date`/`datetime`, which no job field accepts and which JSON
cannot encode. `ManifestLoader` keeps such scalars as strings; everything else is the safe
loader's YAML.
"""

from __future__ import annotations

from typing import Any

import yaml

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
