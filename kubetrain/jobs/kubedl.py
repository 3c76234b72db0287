"""KubeDL's job annotations, on jobs of every kind and API group: the one place defaulting and
validation call for them. Pure.

- `kubedl.io/network-mode: host` is kubetrain's host network mode (kubetrain.frameworks.hostnetwork
  reads and validates both names).
- `kubedl.io/tenancy` → tenancy labels on the job and its pods (kubetrain.jobs.tenancy).
- `kubedl.io/git-sync-config` → an init container fetching the code into a volume every container
  mounts (kubetrain.jobs.codesync).
- `kubedl.io/tensorboard-config` → a TensorBoard pod, Service and Ingress (kubetrain.jobs.tensorboard).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import FieldError
from kubetrain.jobs import codesync, tenancy, tensorboard


def default_kubedl_annotations(obj: dict[str, Any]) -> None:
    """What the annotations add to the job itself (in place, copying what it changes)."""
    tenancy.default_tenancy_labels(obj)


def kubedl_annotation_errors(obj: dict[str, Any], replica_field: str = "") -> list[FieldError]:
    """Every problem of the job's KubeDL annotations, each naming the annotation and its field,
    and of the replica templates they would change."""
    errors = tenancy.tenancy_errors(obj)
    errors.extend(codesync.code_sync_errors(obj))
    errors.extend(tensorboard.tensorboard_errors(obj))
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    spec = obj.get("spec")
    replicas = spec.get(replica_field) if isinstance(spec, Mapping) and replica_field else None
    if isinstance(annotations, Mapping) and isinstance(replicas, Mapping):
        for rtype, rspec in replicas.items():
            if isinstance(rspec, Mapping):
                path = f"spec.{replica_field}[{rtype}]"
                errors.extend(codesync.template_errors(annotations, path, rspec.get("template")))
    return errors
