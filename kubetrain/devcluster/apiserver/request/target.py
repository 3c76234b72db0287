"""What a request is about, independent of HTTP: a `Target` (resource type, version, namespace,
name, subresource, dry run, user, fieldValidation, field manager) and the `Result` of a write."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.request.duplicates import Duplicates

ADMIN_USER = {"username": "kubetrain-admin", "groups": ["system:masters", "system:authenticated"]}


@dataclass
class Target:
    rt: ResourceType
    version: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    dry_run: bool = False
    user: dict[str, Any] = field(default_factory=lambda: dict(ADMIN_USER))
    field_validation: str = "Warn"  # Strict | Warn | Ignore (the fieldValidation query parameter)
    # Served through a conversion webhook: the version the client asked for (this target is the
    # storage version's); admission reports it as requestKind/requestResource.
    request_version: str = ""
    # Served as another group's view of this resource's storage (events.k8s.io/v1 Events are core
    # Events, verbs/eventviews.py): that group version, whose validation rules apply.
    via: str = ""
    # The request body's duplicate keys (duplicates.py), reported with the unknown fields.
    duplicates: Duplicates | None = None
    # The fieldManager query parameter, the client's User-Agent (the manager when fieldManager is
    # not given) and a patch's force parameter (managedfields.py).
    field_manager: str = ""
    user_agent: str = ""
    force: bool | None = None

    @property
    def api_version(self) -> str:
        return self.rt.api_version(self.version)


@dataclass
class Result:
    code: int
    obj: Obj
    warnings: list[str] = field(default_factory=list)
