"""How a job's pods find each other: the job's one headless Service, or one Service per pod.

- `headless` (the default): one headless Service named after the job; pod `<pod>` resolves at
  `<pod>.<job>.<ns>.svc` (the pod's hostname under the Service named by its `subdomain`).
- `per-pod`: one headless Service per pod, named after the pod and selecting it alone — the
  shape Kubeflow's training operator creates — so the bare pod name (`<job>-master-0`) resolves
  in the job's namespace, as scripts and `rdzvHost` values written for Kubeflow expect.

A job chooses with the annotation `kubetrain.io/service-mode`; without it a job adopted from
Kubeflow's training operator or KubeDL (`kubetrain.io/adopted-from`) runs `per-pod` — its adopted
pods have no hostname/subdomain and reach their peers by the per-pod Services — and any other job
the operator's default (`--service-mode`, the chart's `serviceMode`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, forbidden, not_supported
from kubetrain.api.labels import ANNOTATION_ADOPTED, ANNOTATION_SERVICE_MODE, annotations_of

HEADLESS = "headless"
PER_POD = "per-pod"
SERVICE_MODES = (HEADLESS, PER_POD)


def requested_service_mode(annotations: Mapping[str, Any]) -> Any:
    """The `kubetrain.io/service-mode` annotation as written, of a job's annotations
    (`labels.annotations_of`; None when absent)."""
    return annotations.get(ANNOTATION_SERVICE_MODE)


def service_mode(obj: Mapping[str, Any], default: str = HEADLESS) -> str:
    """The mode a job runs in: its annotation when valid, else per-pod for an adopted job, else
    `default`."""
    annotations = annotations_of(obj)
    return runs_service_mode(requested_service_mode(annotations), is_adopted(annotations), default)


def is_adopted(annotations: Mapping[str, Any]) -> bool:
    """Whether a job's annotations (`labels.annotations_of`) say its running pods were adopted
    from Kubeflow's training operator or KubeDL."""
    return bool(annotations.get(ANNOTATION_ADOPTED))


def runs_service_mode(requested: Any, adopted: bool, default: str) -> str:
    """The mode of a job whose annotation reads `requested`, adopted or not (see the module
    docstring)."""
    if requested in SERVICE_MODES:
        return str(requested)
    return PER_POD if adopted else default


def service_mode_errors(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """`check_service_mode` of the annotation of `obj` (and of `old`, the stored job on update)."""
    before = requested_service_mode(annotations_of(old)) if old is not None else None
    return check_service_mode(requested_service_mode(annotations_of(obj)), before, updating=old is not None)


def check_service_mode(value: Any, before: Any = None, *, updating: bool = False) -> list[FieldError]:
    """The annotation's value (as written) is one of SERVICE_MODES; on update (`before`: the
    stored job's) it may not change (pods made under one mode address each other by names the
    other mode does not serve)."""
    path = f"metadata.annotations[{ANNOTATION_SERVICE_MODE}]"
    if updating and value != before:
        return [forbidden(path, f"is immutable (was {QUOTE.encode(before)}): delete and recreate the job")]
    if value is not None and value not in SERVICE_MODES:
        return [not_supported(path, value, SERVICE_MODES)]
    return []
