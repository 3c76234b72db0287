"""Duplicate keys of a JSON request body, with their paths, as sigs.k8s.io/json's strict decoder
reports them (internal/golang/encoding/json: `decodeState.object` with DisallowDuplicateFields,
`newFieldError`, `saveStrictError`).

```python
found = find(raw)            # None: no duplicate (or not JSON); else a Duplicates
found.paths                  # ["metadata.name", "spec.containers[0].image"], document order
found.position("spec.x")     # where the key first occurs, to order among unknown fields
```

Python's json keeps the last value of a repeated key silently, as Go's does; the strict decoder
also reports `duplicate field "<path>"` at the key's second occurrence: keys joined by `.`, list
indices as `[i]`, each path once (`saveStrictError` dedupes), at most 100 errors in all.

The common case pays one extra parse whose hook only compares the number of pairs with the
number of distinct keys (docs/performance.md); the paths are worked out by a second, slower
parse only for a body that has a duplicate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

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

    def position(self, path: str) -> int:
        return self.first.get(path, len(self.first) + len(self.paths))


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


def under(path: str, parents: list[str]) -> bool:
    """Whether `path` is one of `parents` or inside one (a typed struct skips an unknown
    field's value without looking into it, and reports only its unknown field)."""
    return any(path == p or path.startswith(p + ".") or path.startswith(p + "[") for p in parents)
