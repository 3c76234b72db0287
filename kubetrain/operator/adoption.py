"""Taking over jobs another operator started (docs/operations.md, "Taking over running Kubeflow
jobs" and "Serving KubeDL's API"): which of its pods and Services kubetrain adopts, and the
labels that make them kubetrain's. Pure; `adopt_api.py` lists and patches.

Kubeflow's training operator and KubeDL both label a job's pods and Services with the job's
name, the replica type (lower case) and index, name them `<job>-<type>-<index>` like kubetrain
does, and set a controller ownerReference to the job (the job's apiVersion and uid). A `Source`
says which labels and group one operator uses (KubeDL's: `adoption_kubedl.py`). Such an object
lacks kubetrain's `kubetrain.io/job-name`, so the controller's caches (label-selected) never see
it and the job would try to create a pod of the same name. Adopting it means adding kubetrain's
labels — nothing else changes: the pod keeps running, its restartCount counts towards the job's
restarts, and ownership still comes from the ownerReference alone.

A pod gets the labels kubetrain gives the pod of that slot when it creates it (`SlotLabels`;
`adoptlabels.CreatedLabels`: the job prepared and its pod built as the planner does, with the
controller's gang scheduler and the job's attempt) less those its pod template sets to the same
value (the other operator copied the template's labels already): the job's and slot's `kubetrain.io/*` labels,
the tenancy labels of `kubedl.io/tenancy` (jobs/tenancy.py), the group's own labels and the gang
scheduler's. So an adopted pod is selected by whatever selects a pod kubetrain created (tenant
metrics and selectors, the dashboard, the per-pod Services). A job kubetrain cannot lay out (an
invalid spec: it fails and creates no pod) gets the labels the other operator's describe, and
its tenancy labels. A Service gets the labels of the per-pod Service kubetrain makes.

An object is adopted only when its controller ownerReference names a kind kubetrain serves in
the source's group, the source's job-name label agrees with it, and (pods) the replica type is
one of the kind's and the index an integer. The job's uid is checked by the caller against the
stored job (and the job's `managedBy`: another controller's job is left alone), and so is
`Source.refusal`, the source's reasons to leave a job's pods alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubetrain.api.groups import KUBEFLOW_GROUP, group_of
from kubetrain.api.labels import (
    ANNOTATION_ADOPTED,
    ANNOTATION_SERVICE_MODE,
    KUBEDL_ANNOTATION_TENANCY,
    KUBEFLOW_LABEL_JOB_NAME,
    KUBEFLOW_LABEL_JOB_ROLE,
    KUBEFLOW_LABEL_REPLICA_INDEX,
    KUBEFLOW_LABEL_REPLICA_TYPE,
    LABEL_JOB_KIND,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_MANAGED_BY,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    MANAGED_BY_VALUE,
    annotations_of,
)
from kubetrain.api.servicemode import SERVICE_MODES
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.jobs.tenancy import default_tenancy_labels, parse_tenancy

Obj = dict[str, Any]


def _no_refusal(job: Mapping[str, Any]) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class Source:
    """Another operator whose running jobs' pods and Services kubetrain adopts."""

    group: str  # the API group of its jobs
    operator: str  # in messages: "Kubeflow's training operator"
    adopted_from: str  # the value of `kubetrain.io/adopted-from` on an adopted job
    job_name_label: str
    replica_type_label: str
    replica_index_label: str
    job_role_label: str
    selector: str  # what to list: its objects kubetrain has not labelled yet
    # Why a stored job's objects are left alone (None: adoptable); the message says what to do.
    refusal: Callable[[Mapping[str, Any]], str | None] = _no_refusal


KUBEFLOW = Source(
    group=KUBEFLOW_GROUP,
    operator="Kubeflow's training operator",
    adopted_from="kubeflow.org/training-operator",
    job_name_label=KUBEFLOW_LABEL_JOB_NAME,
    replica_type_label=KUBEFLOW_LABEL_REPLICA_TYPE,
    replica_index_label=KUBEFLOW_LABEL_REPLICA_INDEX,
    job_role_label=KUBEFLOW_LABEL_JOB_ROLE,
    selector=f"{KUBEFLOW_LABEL_JOB_NAME},!{LABEL_JOB_NAME}",
)
ADOPTION_SELECTOR = KUBEFLOW.selector
ADOPTED_FROM = KUBEFLOW.adopted_from


@dataclass(frozen=True, slots=True)
class Owner:
    """The job an object's controller ownerReference names."""

    kind: str
    name: str
    uid: str


def owner_of(obj: Mapping[str, Any], source: Source) -> Owner | None:
    """The job of `source`'s group, of a kind kubetrain serves, that controls `obj` (None
    otherwise)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if not isinstance(ref, Mapping) or ref.get("controller") is not True:
            continue
        kind, name, uid = ref.get("kind"), ref.get("name"), ref.get("uid")
        if group_of(ref.get("apiVersion")) != source.group or kind not in FRAMEWORKS:
            return None
        if not isinstance(name, str) or not isinstance(uid, str) or not name or not uid:
            return None
        return Owner(str(kind), name, uid)
    return None


def kubeflow_owner(obj: Mapping[str, Any]) -> Owner | None:
    """`owner_of` for Kubeflow's training operator."""
    return owner_of(obj, KUBEFLOW)


class SlotLabels(Protocol):
    """The labels kubetrain gives the pods of one job it creates itself (`adoptlabels.py`)."""

    @property
    def tenancy(self) -> Mapping[str, str]:
        """The job's tenancy labels (jobs/tenancy.py)."""
        ...

    def pod(self, replica_type: str, index: int) -> dict[str, str] | None:
        """Those of pod `index` of `replica_type` (None: the job cannot say)."""
        ...


def adoption_labels(
    obj: Mapping[str, Any],
    owner: Owner,
    *,
    pod: bool,
    source: Source = KUBEFLOW,
    created: SlotLabels | None = None,
) -> dict[str, str] | None:
    """kubetrain's labels for a pod (`pod=True`) or Service `source`'s operator made for
    `owner`'s job, or None when its labels do not describe a slot of that job (left alone).
    `created`: the job's (a pod gets what kubetrain gives the pod of its slot)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(source.job_name_label) != owner.name:
        return None
    out = {LABEL_JOB_NAME: owner.name, LABEL_JOB_KIND: owner.kind, LABEL_MANAGED_BY: MANAGED_BY_VALUE}
    rtype = str(labels.get(source.replica_type_label) or "")
    index = str(labels.get(source.replica_index_label) or "")
    known = {t.lower(): t for t in FRAMEWORKS[owner.kind].replica_types}
    if rtype.lower() in known and index.isdigit():
        out[LABEL_REPLICA_TYPE] = rtype.lower()
        out[LABEL_REPLICA_INDEX] = str(int(index))
    elif pod:
        return None
    if not pod:
        return out
    slot = created.pod(known[rtype.lower()], int(index)) if created is not None else None
    if slot is not None:
        return slot
    if labels.get(source.job_role_label) == "master":
        out[LABEL_JOB_ROLE] = "master"
    return {**(created.tenancy if created is not None else {}), **out}


def label_patch(obj: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """A JSON merge patch adding `labels`, guarded by the object's resourceVersion (a pod that
    changed meanwhile answers 409 and is looked at again)."""
    meta = obj.get("metadata") or {}
    return {"metadata": {"labels": dict(labels), "resourceVersion": meta.get("resourceVersion")}}


def adopted_job_patch(job: Mapping[str, Any], source: Source = KUBEFLOW) -> dict[str, Any] | None:
    """The merge patch marking a job whose objects were adopted `kubetrain.io/adopted-from`, with
    its tenancy labels, or None when nothing is to write. The mark (left out when the job is
    marked already or its author chose its service mode) makes it run in per-pod service mode
    (kubetrain.api.servicemode): the adopted pods have no hostname or subdomain and reach their
    peers at per-pod Service names (`<job>-master-0`, `<job>-worker-0.<ns>.svc`), so a pod
    kubetrain recreates for the job must use those names and find its own Service there. The
    labels are those kubetrain's mutating webhook gives a job of its `kubedl.io/tenancy`
    (jobs/tenancy.py, `default_tenancy_labels`), which the other operator's job was stored
    without: TrainingPolicy `jobSelector`s and the tenant quota select jobs by them."""
    meta: Obj = {}
    annotations = annotations_of(job)
    if (
        not annotations.get(ANNOTATION_ADOPTED)
        and annotations.get(ANNOTATION_SERVICE_MODE) not in SERVICE_MODES
    ):
        meta["annotations"] = {ANNOTATION_ADOPTED: source.adopted_from}
    labels = _tenancy_label_changes(job, annotations)
    if labels:
        meta["labels"] = labels
    return {"metadata": meta} if meta else None


def _tenancy_label_changes(job: Mapping[str, Any], annotations: Mapping[str, Any]) -> dict[str, str | None]:
    """The job's label changes `default_tenancy_labels` makes (None: removed), as merge patch values."""
    raw = annotations.get(KUBEDL_ANNOTATION_TENANCY)
    if raw is None:
        return {}
    fields, errors = parse_tenancy(raw)
    meta = job.get("metadata")
    if errors or not isinstance(meta, Mapping):
        return {}
    defaulted: Obj = {"metadata": dict(meta)}
    default_tenancy_labels(defaulted, fields)
    raw_labels = meta.get("labels")
    before: Mapping[str, Any] = raw_labels if isinstance(raw_labels, Mapping) else {}
    after = defaulted["metadata"].get("labels") or {}
    changes: dict[str, str | None] = {k: v for k, v in after.items() if before.get(k) != v}
    changes.update({k: None for k in before if k not in after})
    return changes
