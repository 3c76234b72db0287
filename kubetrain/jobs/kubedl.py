"""KubeDL's job annotations, on jobs of every kind and API group: the one place defaulting and
validation call for them. Pure.

- `kubedl.io/network-mode: host` is kubetrain's host network mode (kubetrain.frameworks.hostnetwork
  reads and validates both names).
- `kubedl.io/tenancy` → tenancy labels on the job and its pods (kubetrain.jobs.tenancy).
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.errors import FieldError
from kubetrain.jobs import tenancy


def default_kubedl_annotations(obj: dict[str, Any]) -> None:
    """What the annotations add to the job itself (in place, copying what it changes)."""
    tenancy.default_tenancy_labels(obj)


def kubedl_annotation_errors(obj: dict[str, Any]) -> list[FieldError]:
    """Every problem of the job's KubeDL annotations, each naming the annotation and its field."""
    return tenancy.tenancy_errors(obj)
