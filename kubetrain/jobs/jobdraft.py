"""The parse stage: a wire-form job read once, at the edge, into a typed draft. Pure.

`read_job` is the first stage of the operator's pipeline (`operator/prepare.py`: parse →
default → validate → lay out). It is lenient, like the mutating webhook must be: a job that is
invalid still gives a draft — what could be read, plus the field errors of what could not — so
defaulting and validation carry on and report every problem at once.

What the draft settles once, so no later stage asks again:

- the framework (`kind` through the registry); None for a kind kubetrain does not know;
- the layout: a `training.kubedl.io` job is read into kubetrain's layout here, once
  (`kubedllayout.read_layout`), and the KubeDL fields kubetrain does not run are errors of the
  draft, named as the user wrote them, found in the same pass;
- the annotations kubetrain acts on (`kubetrain.jobs.annotations`: KubeDL's tenancy, code sync
  and TensorBoard, host network mode and its port range, the service mode the job asks for, the
  progress annotations), each parsed into its typed value and its errors, which defaulting,
  validation and the layout take instead of reading the annotation again.

`read_draft` is the same stage for the webhooks' edge (`defaulting.default_job`,
`validation.validate_job`): the object as the request carries it, status included, not copied
(a KubeDL job's `wire` is a converted copy; any other's is the object itself, which defaulting
only reads — it is copy-on-write). `read_job`, the operator's, reads the job without its status
and makes `wire` a copy: the input is never changed, and the defaulted job shares nothing with
the informer's object.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubetrain.api.errors import FieldError
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.annotations import JobAnnotations, read_annotations
from kubetrain.jobs.kubedl import KubeDLAnnotations
from kubetrain.jobs.kubedllayout import read_layout


@dataclass(frozen=True)
class JobDraft:
    """A job as parsed at the edge (see the module docstring)."""

    framework: Framework | None  # None: a kind kubetrain does not know
    kind: Any  # `kind` as written
    wire: dict[str, Any]  # the job in kubetrain's layout (`read_job`: without status, a copy)
    errors: list[FieldError] = field(default_factory=list)  # what the parse stage refuses
    annotations: JobAnnotations = field(default_factory=JobAnnotations)
    converted: bool = False  # a KubeDL job, read into kubetrain's layout (`wire` is a copy)

    @property
    def kubedl(self) -> KubeDLAnnotations:
        """KubeDL's annotations (tenancy, code sync, TensorBoard), parsed."""
        return self.annotations.kubedl

    @property
    def service_mode(self) -> Any:
        """The `kubetrain.io/service-mode` annotation as written."""
        return self.annotations.service_mode

    def runs_service_mode(self, default: str) -> str:
        """The mode the job runs in: its annotation when valid, else the operator's `default`."""
        return self.annotations.runs_service_mode(default)


def read_job(obj: Mapping[str, Any]) -> JobDraft:
    """The draft of one stored job, without its status, `wire` a copy (never raises; problems
    are the draft's `errors`; a kind kubetrain does not know gives an empty draft)."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or get_framework(kind) is None:
        return JobDraft(None, kind, {})
    draft = read_draft({k: v for k, v in obj.items() if k != "status"})
    return draft if draft.converted else replace(draft, wire=copy.deepcopy(draft.wire))


def read_draft(obj: Mapping[str, Any]) -> JobDraft:
    """The draft of a wire-form object as it is, of any kind (see the module docstring)."""
    kind = obj.get("kind")
    framework = get_framework(kind) if isinstance(kind, str) else None
    annotations = read_annotations(obj)
    wire, errors = read_layout(obj)
    converted = wire is not obj
    return JobDraft(
        framework, kind, wire if isinstance(wire, dict) else dict(wire), errors, annotations, converted
    )
