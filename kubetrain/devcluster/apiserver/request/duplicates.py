"""Duplicate keys of a JSON request body, with their paths, as sigs.k8s.io/json's strict decoder
reports them (internal/golang/encoding/json: `decodeState.object` with DisallowDuplicateFields,
`newFieldError`, `saveStrictError`).

```python
found = find(raw)            # None: no duplicate (or not JSON); else a Duplicates
found.paths                  # [(3, "metadata.name"), ...]: (where, path), document order
found.position("spec.x")     # where the key first occurs, to order among unknown fields
find_yaml(raw).yaml          # 'yaml: unmarshal errors:\n  line 4: key "name" already set in map'
```

Python's json keeps the last value of a repeated key silently, as Go's does; the strict decoder
also reports `duplicate field "<path>"` at the key's second occurrence: keys joined by `.`, list
indices as `[i]`, each path once (`saveStrictError` dedupes), at most 100 errors in all.

A YAML body (`application/yaml`) is checked as sigs.k8s.io/yaml's `YAMLToJSONStrict` does, which
the strict serializer runs before anything else (apimachinery runtime/serializer/json
`Serializer.unmarshal`): go-yaml v2's strict decoder (decode.go `setMapIndex`) reports every
repeated key of every mapping, after its value, as `line <L>: key <%#v of the key> already set in
map`, L the line where the repeated key's value starts; all in one error `yaml: unmarshal
errors:\n  ...`, which the API server splits into one warning per line under Warn (rest.go
`parseYAMLWarnings`). The JSON it converts to has no repeated key left.

The common case pays one extra parse whose hook only compares the number of pairs with the
number of distinct keys (docs/performance.md); the paths are worked out by a second, slower
parse only for a body that has a duplicate.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import yaml

from kubetrain.api.manifests import ManifestLoader
from kubetrain.devcluster.apiserver.base.gojson import unmarshal_kind

MAX_ERRORS = 100  # saveStrictError: "prevent excessive numbers of accumulated errors"


class _Pairs(list[tuple[str, Any]]):
    """An object as its (key, value) pairs in document order, repeats included."""


class _Found(Exception):
    pass


def _check(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Found
    return obj


@dataclass
class Duplicates:
    """The duplicate keys of a body: `paths` in the order Go reports them, each with the index
    of its second occurrence among all keys in document order; `first` where each key path
    first occurs (for ordering unknown fields among them)."""

    paths: list[tuple[int, str]] = field(default_factory=list)  # (event index, path)
    first: dict[str, int] = field(default_factory=dict)  # path -> index of its first occurrence
    reported: set[str] = field(default_factory=set)
    yaml: str = ""  # a YAML body's error, `yaml: unmarshal errors:\n  line 3: key "a" ...`
    # path of each object with a repeated key -> its (key, JSON type of the value) pairs in
    # document order, repeats included: Go's decoder decodes every one of them, Python's keeps
    # only the last (to find the first `UnmarshalTypeError` as Go does)
    repeated_in: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def position(self, path: str) -> int:
        return self.first.get(path, len(self.first) + len(self.paths))


def of_body(raw: bytes, content_type: str) -> Duplicates | None:
    """The duplicates of a request body: YAML when the Content-Type says so, else JSON."""
    return find_yaml(raw) if "yaml" in content_type else find(raw)


def find(raw: bytes | str) -> Duplicates | None:
    """The duplicate keys of the JSON text `raw`; None when it has none or is not JSON."""
    try:
        json.loads(raw, object_pairs_hook=_check)
        return None
    except _Found:
        pass
    except ValueError:
        return None
    found = Duplicates()
    _walk(json.loads(raw, object_pairs_hook=_Pairs), "", found, [0])
    return found


def _walk(value: Any, path: str, found: Duplicates, counter: list[int]) -> None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        if len({key for key, _ in value}) != len(value):
            found.repeated_in[path] = [(key, json_type(item)) for key, item in value]
        for key, item in value:
            here = f"{path}.{key}" if path else key
            counter[0] += 1
            if key in seen:
                if here not in found.reported and len(found.paths) < MAX_ERRORS:
                    found.reported.add(here)
                    found.paths.append((counter[0], here))
            else:
                seen.add(key)
                found.first.setdefault(here, counter[0])
            _walk(item, here, found, counter)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, f"{path}[{i}]", found, counter)


def json_type(value: Any) -> str:
    """`UnmarshalTypeError.Value` for a decoded JSON value, a pair list (a decoded object whose
    repeated keys are kept) included."""
    return "object" if isinstance(value, _Pairs) else unmarshal_kind(value)


def under(path: str, parents: list[str]) -> bool:
    """Whether `path` is one of `parents` or inside one (a typed struct skips an unknown
    field's value without looking into it, and reports only its unknown field)."""
    return path in parents or inside(path, parents)


def inside(path: str, parents: list[str]) -> bool:
    """Whether `path` is inside one of `parents` (not one of them)."""
    return any(path.startswith(p + ".") or path.startswith(p + "[") for p in parents)


YAML_ERRORS = "yaml: unmarshal errors:\n"


def find_yaml(raw: bytes | str) -> Duplicates | None:
    """The repeated keys of the YAML text `raw`; None when it has none or is not YAML."""
    try:
        node = yaml.compose(raw, Loader=ManifestLoader)  # a SafeLoader subclass: safe
    except yaml.YAMLError:
        return None
    lines: list[str] = []
    if node is not None:
        _walk_yaml(ManifestLoader(""), node, lines)
    return Duplicates(yaml=YAML_ERRORS + "  " + "\n  ".join(lines)) if lines else None


def yaml_warnings(text: str) -> list[str]:
    """One warning per line of a YAML strict error (rest.go `parseYAMLWarnings`), else `text`."""
    if not text.startswith(YAML_ERRORS):
        return [text]
    return [line.strip() for line in text[len(YAML_ERRORS) :].split("\n")]


def _walk_yaml(loader: ManifestLoader, node: yaml.Node, lines: list[str]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[tuple[str, Any]] = set()
        for key_node, value_node in node.value:
            _walk_yaml(loader, value_node, lines)  # decode.go `mapping`: the value first
            try:
                key = loader.construct_object(key_node, deep=True)
                ident = (type(key).__name__, key)
                hash(ident)
            except (yaml.YAMLError, TypeError):
                continue  # a key that is not a scalar: refused by the YAML decoding itself
            if ident in seen:
                lines.append(
                    f"line {value_node.start_mark.line + 1}: key {_go_value(key)} already set in map"
                )
            seen.add(ident)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _walk_yaml(loader, item, lines)


def _go_value(key: Any) -> str:
    """A YAML key as Go's `%#v` prints it: a quoted string, `true`, `1`, `<nil>`."""
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    if key is None:
        return "<nil>"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float):  # go-yaml v2 resolves it to a float64: %#v prints it as %v does
        return go_float(key)
    return str(key)


def go_float(value: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 64), as %v prints a float64: the shortest digits, in
    exponent form (two-digit exponent at least) when the exponent is below -4 or at least 6."""
    if not math.isfinite(value):
        return "NaN" if value != value else ("+Inf" if value > 0 else "-Inf")
    if value == 0:
        return "0"
    shortest = Decimal(repr(value)).normalize()
    _sign, digits, exp = shortest.as_tuple()
    assert isinstance(exp, int)
    exponent = len(digits) + exp - 1
    if -4 <= exponent < 6:
        return format(shortest, "f")
    text = "".join(map(str, digits))
    head = text[0] + ("." + text[1:] if len(text) > 1 else "")
    sign = "-" if value < 0 else ""
    return f"{sign}{head}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
