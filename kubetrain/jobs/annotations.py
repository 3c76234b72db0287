"""The annotations of a job that kubetrain acts on, read once where the job comes in into their
typed values and their errors (`read_annotations`: the parse stage's, kubetrain.jobs.jobdraft,
and the webhooks' edge). Defaulting, validation and the layout take the result instead of
reading the annotations again. Pure.

- KubeDL's tenancy, code sync and TensorBoard (`kubetrain.jobs.kubedl`);
- host network mode and its port range (`kubedl.io/network-mode`, `kubetrain.io/network-mode`,
  `kubetrain.io/host-port-range`: kubetrain.frameworks.hostnetwork);
- the service mode (`kubetrain.io/service-mode`, kubetrain.api.servicemode), as written: its
  check compares it with the stored job's on update;
- the progress annotations (kubetrain.api.trainerstatus): the deadline they declare and their
  problems; the start deadline (kubetrain.api.startdeadline) and its problem;
- the apiVersion the job was created at (`kubetrain.io/created-api-version`,
  kubetrain.jobs.createdversion), as written: its check compares it with the stored job's on update.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api import servicemode, startdeadline, trainerstatus
from kubetrain.api.errors import FieldError
from kubetrain.api.labels import ANNOTATION_CREATED_API_VERSION
from kubetrain.frameworks.hostnetwork import HostNetwork, read_host_network
from kubetrain.jobs.kubedl import KubeDLAnnotations, read_kubedl_annotations


@dataclass(frozen=True)
class JobAnnotations:
    """A job's annotations, each parsed once (see the module docstring)."""

    kubedl: KubeDLAnnotations = field(default_factory=KubeDLAnnotations)  # tenancy, code sync, TensorBoard
    host_network: HostNetwork = field(default_factory=HostNetwork)
    service_mode: Any = None  # the `kubetrain.io/service-mode` annotation as written
    progress_errors: tuple[FieldError, ...] = ()  # problems of the progress annotations
    # `kubetrain.io/progress-deadline-seconds` (None: absent or not a positive integer); the
    # job's `runPolicy.progressDeadlineSeconds` comes first.
    progress_deadline: int | None = None
    created_api_version: Any = None  # `kubetrain.io/created-api-version` as written
    # `kubetrain.io/start-deadline-seconds` (None: absent or not a positive integer); the job's
    # `runPolicy.startDeadlineSeconds` comes first.
    start_deadline: int | None = None
    start_deadline_errors: tuple[FieldError, ...] = ()  # its problem, if any
    adopted: bool = False  # `kubetrain.io/adopted-from`: its pods were Kubeflow's operator's

    def runs_service_mode(self, default: str) -> str:
        """The mode the job runs in: its annotation when valid, else per-pod when adopted, else
        the operator's `default` (kubetrain.api.servicemode)."""
        return servicemode.runs_service_mode(self.service_mode, self.adopted, default)


def read_annotations(obj: Mapping[str, Any]) -> JobAnnotations:
    """The annotations of a wire-form job, parsed (never raises)."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping):
        return JobAnnotations()
    return JobAnnotations(
        read_kubedl_annotations(annotations),
        read_host_network(annotations),
        servicemode.requested_service_mode(annotations),
        tuple(trainerstatus.annotation_errors(annotations)),
        trainerstatus.deadline_seconds(annotations.get(trainerstatus.ANNOTATION_DEADLINE)),
        annotations.get(ANNOTATION_CREATED_API_VERSION),
        start_deadline=startdeadline.start_deadline_seconds(annotations),
        start_deadline_errors=tuple(startdeadline.annotation_errors(annotations)),
        adopted=servicemode.is_adopted(annotations),
    )
