"""Small value types shared by the devcluster modules: resource identities and descriptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

Obj = dict[str, Any]


class GroupResource(NamedTuple):
    group: str
    resource: str


@dataclass
class ResourceType:
    """One served resource (all versions of it share storage, like kube-apiserver with conversion None).

    `versions` are the served versions, the first is the preferred one. `schemas` maps a version
    to its structural OpenAPI v3 schema (custom resources only). `field_selectors` are the field
    labels besides metadata.name / metadata.namespace that list/watch accept.
    """

    group: str
    versions: list[str]
    resource: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    list_kind: str = ""
    subresources: tuple[str, ...] = ()
    field_selectors: tuple[str, ...] = ()
    verbs: tuple[str, ...] = (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )
    has_generation: bool = False
    return_deleted_object: bool = False
    custom: bool = False
    schemas: dict[str, Obj] = field(default_factory=dict)
    scale: Obj | None = None  # CRD spec.versions[].subresources.scale
    printer_columns: list[Obj] = field(default_factory=list)
    # CRDs: the version objects are stored at, and `spec.conversion` when its strategy is Webhook
    # (requests at another version are converted: devcluster/apiserver/verbs/conversion.py).
    storage_version: str = ""
    conversion: Obj | None = None
    # CRDs: each version's compiled x-kubernetes-validations rules (crds/celrules.py `Compiled`).
    cel: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.singular:
            self.singular = self.kind.lower()
        if not self.list_kind:
            self.list_kind = self.kind + "List"

    @property
    def gr(self) -> GroupResource:
        return GroupResource(self.group, self.resource)

    @property
    def key(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources
