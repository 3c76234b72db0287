"""Validation of the metadata every kind shares, as apimachinery's api/validation/objectmeta.go
does on create and update (ValidateObjectMeta, ValidateObjectMetaUpdate): owner references.

- Each reference needs an apiVersion with a version, a kind, a name and a uid ("must not be
  empty"; the field is `metadata.ownerReferences.<field>`, without an index, as upstream) and may
  not point at a core/v1 Event.
- At most one reference has `controller: true` (what makes "adopt" safe: two controllers are a
  422 naming both, `Kind/name`).
"""

from __future__ import annotations

import json
from typing import Any

from kubetrain.devcluster.apiserver.errors import Cause

FIELD = "metadata.ownerReferences"


def _shown(value: Any) -> str:
    """A field.Invalid value as kube-apiserver prints it: strings quoted, the rest as JSON."""
    return json.dumps(value, separators=(",", ":"))


def owner_reference_causes(meta: dict[str, Any]) -> list[Cause]:
    refs = meta.get("ownerReferences") or []
    if not isinstance(refs, list):
        return [Cause("FieldValueInvalid", f"Invalid value: {_shown(refs)}: must be a list", FIELD)]
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(
                Cause("FieldValueInvalid", f"Invalid value: {_shown(ref)}: must be an object", FIELD)
            )
            continue
        api_version = str(ref.get("apiVersion") or "")
        version = api_version.rsplit("/", 1)[-1]
        if not version:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_shown(api_version)}: version must not be empty",
                    f"{FIELD}.apiVersion",
                )
            )
        for field in ("kind", "name", "uid"):
            if not ref.get(field):
                value = _shown(str(ref.get(field) or ""))
                causes.append(
                    Cause(
                        "FieldValueInvalid", f"Invalid value: {value}: must not be empty", f"{FIELD}.{field}"
                    )
                )
        if api_version == "v1" and ref.get("kind") == "Event":
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_shown(ref)}: /v1, Kind=Event is disallowed from being an owner",
                    FIELD,
                )
            )
        if ref.get("controller") is True:
            name = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {_shown(refs)}: Only one reference can have Controller set to true. "
                        f'Found "true" in references for {first_controller} and {name}',
                        FIELD,
                    )
                )
            else:
                first_controller = name
    return causes
