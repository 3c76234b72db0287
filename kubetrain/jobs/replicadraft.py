"""One entry of a job's replica map, read once: the `ReplicaDraft`. Pure.

The parse stage (kubetrain.jobs.jobdraft) reads the replica map into drafts once; defaulting
gives the defaulted ones, and the framework hooks and validation rules take them — the replica
type a key names, its path, its count, its template, containers and framework container —
instead of walking the map again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.errors import json_int
from kubetrain.api.podtemplate import container_index, containers_of
from kubetrain.frameworks.base import Framework


@dataclass(frozen=True)
class ReplicaDraft:
    """One entry of a job's replica map, read once (`read_replicas`)."""

    key: Any  # the key as written
    # The key defaulting gives it: the replica type's canonical spelling (`worker` → `Worker`),
    # unless another key names the same type ignoring case (validation reports the duplicate).
    type: Any
    map_path: str  # `spec.<replica field>`
    spec: Any  # the replica spec (a dict when well-formed)
    replicas: Any = None  # `replicas` as written, 1 when absent (None: the spec is not a dict)
    template: Any = None
    containers: list[Any] = field(default_factory=list)  # template.spec.containers
    container_index: int | None = None  # the framework container (None: no containers)

    @property
    def path(self) -> str:
        """`spec.<replica field>[<key>]`, as messages name the replica spec."""
        return f"{self.map_path}[{self.key}]"

    def evolve(self, **changes: Any) -> ReplicaDraft:
        """`dataclasses.replace(self, **changes)` for defaulting's hot path, several times
        cheaper (no field introspection, no frozen `__setattr__` per field); `changes` name
        fields."""
        if not changes.keys() <= self.__dict__.keys():
            raise TypeError(f"not fields of ReplicaDraft: {sorted(changes.keys() - self.__dict__.keys())}")
        new = object.__new__(ReplicaDraft)
        new.__dict__.update(self.__dict__, **changes)
        return new

    @property
    def count(self) -> int | None:
        """Its number of pods: `replicas` (absent or null: 1), None when not an integer."""
        if self.replicas is None:
            return 1 if isinstance(self.spec, dict) else None
        return json_int(self.replicas)


def read_replicas(spec: Any, framework: Framework) -> tuple[ReplicaDraft, ...] | None:
    """The drafts of `spec`'s replica map, in its order (None when the map is not a mapping)."""
    replica_map = spec.get(framework.replica_field) if isinstance(spec, Mapping) else None
    if not isinstance(replica_map, dict):
        return None
    canonical = {t.lower(): t for t in framework.replica_types}
    spellings: dict[Any, int] = {}
    for key in replica_map:
        folded = key.lower() if isinstance(key, str) else key
        spellings[folded] = spellings.get(folded, 0) + 1
    map_path = f"spec.{framework.replica_field}"
    drafts = []
    for key, rspec in replica_map.items():
        unique = isinstance(key, str) and spellings[key.lower()] == 1
        rtype = canonical.get(key.lower(), key) if unique else key
        if not isinstance(rspec, dict):
            drafts.append(ReplicaDraft(key, rtype, map_path, rspec))
            continue
        template = rspec.get("template")
        containers = containers_of(template)
        index = container_index(containers, framework.container_name)
        replicas = rspec.get("replicas", 1)
        drafts.append(ReplicaDraft(key, rtype, map_path, rspec, replicas, template, containers, index))
    return tuple(drafts)
