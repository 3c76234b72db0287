"""KubeDL's job annotations, on jobs of every kind and API group: read once into their typed
values (`read_kubedl_annotations`, called by kubetrain.jobs.annotations at the parse stage, which
the operator and the webhooks' edge share), which defaulting and validation then take. Pure.

- `kubedl.io/network-mode: host` is kubetrain's host network mode (kubetrain.frameworks.hostnetwork
  reads and validates both names).
- `kubedl.io/tenancy` → tenancy labels on the job and its pods (kubetrain.jobs.tenancy).
- `kubedl.io/git-sync-config` → an init container fetching the code into a volume every container
  mounts (kubetrain.jobs.codesync).
- `kubedl.io/tensorboard-config` → a TensorBoard pod, Service and Ingress (kubetrain.jobs.tensorboard).
- KubeDL annotations kubetrain does not act on (`Framework.kubedl_unread_annotations`, e.g. a
  PyTorchJob's `kubedl.io/enable-elastic-training`): a warning says so (`kubedl_annotation_warnings`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.errors import FieldError
from kubetrain.api.labels import (
    KUBEDL_ANNOTATION_GIT_SYNC,
    KUBEDL_ANNOTATION_TENANCY,
    KUBEDL_ANNOTATION_TENSORBOARD,
    annotations_of,
)
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs import codesync, tenancy, tensorboard
from kubetrain.jobs.replicadraft import ReplicaDraft


def kubedl_annotation_warnings(obj: Mapping[str, Any]) -> list[str]:
    """The KubeDL annotations of a job that kubetrain does not act on
    (`Framework.kubedl_unread_annotations`, set to "true"), each a warning naming it and what
    happens instead."""
    framework = get_framework(str(obj.get("kind")))
    annotations = annotations_of(obj)
    return [
        f"metadata.annotations[{name}]: not read by kubetrain: {instead}"
        for name, instead in (framework.kubedl_unread_annotations if framework is not None else ())
        if annotations.get(name) == "true"
    ]


@dataclass(frozen=True)
class KubeDLAnnotations:
    """The job's KubeDL annotations, each parsed once: its typed value — None without the
    annotation or with one validation refuses — and every problem found, in the order validation
    reports them (tenancy, code sync, TensorBoard)."""

    tenancy: Mapping[str, str] | None = None  # the tenancy fields (`tenant`, `user`, …)
    code_sync: codesync.CodeSync | None = None
    tensorboard: tensorboard.TensorBoardConfig | None = None
    errors: tuple[FieldError, ...] = ()


def read_kubedl_annotations(annotations: Mapping[str, Any]) -> KubeDLAnnotations:
    """The KubeDL annotations among a job's annotations (`labels.annotations_of`), parsed."""
    errors: list[FieldError] = []
    fields: Mapping[str, str] | None = None
    raw = annotations.get(KUBEDL_ANNOTATION_TENANCY)
    if raw is not None:
        parsed, problems = tenancy.parse_tenancy(raw)
        errors.extend(problems)
        fields = None if problems else parsed
    sync: codesync.CodeSync | None = None
    raw = annotations.get(KUBEDL_ANNOTATION_GIT_SYNC)
    if raw is not None:
        sync, problems = codesync.parse_code_sync(raw)
        errors.extend(problems)
    board: tensorboard.TensorBoardConfig | None = None
    raw = annotations.get(KUBEDL_ANNOTATION_TENSORBOARD)
    if raw is not None:
        board, problems = tensorboard.parse_tensorboard(raw)
        errors.extend(problems)
    return KubeDLAnnotations(fields, sync, board, tuple(errors))


def kubedl_annotation_errors(read: KubeDLAnnotations, replicas: Iterable[ReplicaDraft]) -> list[FieldError]:
    """Every problem of the job's KubeDL annotations (`read` from the job), each naming the
    annotation and its field, and of the replica templates (`replicas`, as read) they would
    change."""
    errors = list(read.errors)
    if read.code_sync is not None:
        for r in replicas:
            if isinstance(r.spec, Mapping):
                errors.extend(codesync.template_errors(r.path, r.template))
    return errors


def _problems(key: str, raw: Any) -> list[FieldError]:
    if key == KUBEDL_ANNOTATION_TENANCY:
        return tenancy.parse_tenancy(raw)[1]
    if key == KUBEDL_ANNOTATION_GIT_SYNC:
        return codesync.parse_code_sync(raw)[1]
    return tensorboard.parse_tensorboard(raw)[1]


def kubedl_annotation_update_errors(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The problems of the KubeDL annotations an update sets or changes (`obj` against `old`),
    for the webhook to refuse a metadata-only edit (`kubectl annotate`) that would otherwise be
    stored unchecked; an annotation left as it was is not judged again."""
    new, before = annotations_of(obj), annotations_of(old)
    errors: list[FieldError] = []
    for key in (KUBEDL_ANNOTATION_TENANCY, KUBEDL_ANNOTATION_GIT_SYNC, KUBEDL_ANNOTATION_TENSORBOARD):
        if key in new and new[key] != before.get(key):
            errors.extend(_problems(key, new[key]))
    return errors
