"""The parse stage: a wire-form job read once, at the edge, into a typed draft. Pure.

`read_job` is the first stage of the operator's pipeline (`operator/prepare.py`: parse →
default → validate → lay out). It is lenient, like the mutating webhook must be: a job that is
invalid still gives a draft — what could be read, plus the field errors of what could not — so
defaulting and validation carry on and report every problem at once.

What the draft settles once, so no later stage asks again:

- the framework (`kind` through the registry); None for a kind kubetrain does not know; and
  whether `kind` and `apiVersion` name a job of the API groups served (`typemeta`), the type
  stage's refusal (`type_errors`), checked on the job in kubetrain's layout; and the apiVersions
  its kind is created at in its group when served at more than one (`served_versions`,
  `createdversion.served_api_versions`), the values its created-api-version annotation may take;
  and the API group of its apiVersion (`group`), which the operator's choice of status projection
  takes (`mpilabels.written_as_mpi_operator`);
- the layout: a `training.kubedl.io` job is read into kubetrain's layout here, once
  (`kubedllayout.read_layout`), and the KubeDL fields kubetrain does not run are errors of the
  draft, named as the user wrote them, found in the same pass;
- the run policy's `podFailurePolicy` as written, which defaulting defaults and validation
  checks without reading the run policy again;
- the replica map: one `ReplicaDraft` per entry — the replica type its key names, its path, its
  `replicas` as a count, its template, containers and framework container — which defaulting,
  the framework hooks and validation take instead of walking the map again;
- the annotations kubetrain acts on (`kubetrain.jobs.annotations`: KubeDL's tenancy, code sync
  and TensorBoard, host network mode and its port range, the service mode the job asks for, the
  progress annotations), each parsed into its typed value and its errors, which defaulting,
  validation and the layout take instead of reading the annotation again.

`read_draft` is the same stage for the webhooks' edge (`defaulting.default_job`,
`validation.validate_job`): the object as the request carries it, status included, not copied
(a KubeDL job's `wire` is a converted copy; any other's is the object itself, which defaulting
only reads — it is copy-on-write). `read_job`, the operator's, reads the job without its status
and makes `wire` a copy (`api.jsoncopy.json_copy`: an orjson round trip, exact for JSON data, ~6x cheaper than
the `copy.deepcopy` that was most of a large job's first `prepare_job`): the input is never
changed, and the defaulted job shares nothing with the informer's object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.errors import FieldError, json_int
from kubetrain.api.groups import JOB_GROUPS, group_of
from kubetrain.api.jsoncopy import json_copy
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.annotations import JobAnnotations, read_annotations
from kubetrain.jobs.createdversion import served_api_versions
from kubetrain.jobs.failurepolicy import read_pod_failure_policy
from kubetrain.jobs.kubedl import KubeDLAnnotations
from kubetrain.jobs.kubedllayout import read_layout
from kubetrain.jobs.replicadraft import ReplicaDraft, read_replicas
from kubetrain.jobs.typemeta import check_type_meta


@dataclass(frozen=True)
class JobDraft:
    """A job as parsed at the edge (see the module docstring)."""

    framework: Framework | None  # None: a kind kubetrain does not know
    kind: Any  # `kind` as written
    wire: dict[str, Any]  # the job in kubetrain's layout (`read_job`: without status, a copy)
    errors: list[FieldError] = field(default_factory=list)  # what the parse stage refuses
    annotations: JobAnnotations = field(default_factory=JobAnnotations)
    converted: bool = False  # a KubeDL job, read into kubetrain's layout (`wire` is a copy)
    replicas: tuple[ReplicaDraft, ...] | None = None  # its replica map (None: not a mapping)
    # `kind`/`apiVersion` problems (`typemeta.check_type_meta`): the type stage reads no further.
    type_errors: tuple[FieldError, ...] = ()
    # The apiVersions its kind is created at in its group, when it is served at more than one
    # (`createdversion.served_api_versions`; () otherwise, and for an unknown kind).
    served_versions: tuple[str, ...] = ()
    # `spec.runPolicy.podFailurePolicy` as written (`failurepolicy.read_pod_failure_policy`);
    # the defaulted draft's as defaulting left it, which validation checks.
    pod_failure_policy: Any = None
    group: str = ""  # the API group of its apiVersion (`groups.group_of`; "" for a malformed one)

    @property
    def counts(self) -> dict[Any, int | None]:
        """Pods per replica key (`ReplicaDraft.count`), in the map's order."""
        return {r.key: r.count for r in self.replicas or ()}

    @property
    def total_replicas(self) -> int | None:
        """The sum of `replicas` as written (absent: 1); None when the map is not a mapping or
        some `replicas` is not an integer (null included)."""
        if self.replicas is None:
            return None
        counts = [json_int(r.replicas) for r in self.replicas]
        return None if None in counts else sum(c for c in counts if c is not None)

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
    return read_draft({k: v for k, v in obj.items() if k != "status"}, copy_wire=True)


def read_draft(
    obj: Mapping[str, Any], *, copy_wire: bool = False, groups: Sequence[str] = JOB_GROUPS
) -> JobDraft:
    """The draft of a wire-form object as it is, of any kind (see the module docstring);
    `copy_wire`: `wire` is a copy even when no conversion made one; `groups` are the API groups
    whose apiVersion is accepted (kubetrain.api.groups)."""
    kind = obj.get("kind")
    framework = get_framework(kind) if isinstance(kind, str) else None
    annotations = read_annotations(obj)
    wire, errors = read_layout(obj)
    converted = wire is not obj
    if copy_wire and not converted:
        wire = json_copy(dict(obj))
    replicas = read_replicas(wire.get("spec"), framework) if framework is not None else None
    wire = wire if isinstance(wire, dict) else dict(wire)
    type_errors = tuple(check_type_meta(wire, groups))
    group = group_of(wire.get("apiVersion"))
    served = served_api_versions(framework.kind, group) if framework is not None else ()
    failure_policy = read_pod_failure_policy(wire.get("spec"))
    return JobDraft(
        framework,
        kind,
        wire,
        errors,
        annotations,
        converted,
        replicas,
        type_errors,
        served,
        failure_policy,
        group,
    )
