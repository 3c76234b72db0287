"""Taking over jobs Kubeflow's training operator started (docs/operations.md, "Taking over
running Kubeflow jobs"): which of its pods and Services kubetrain adopts, and the labels that
make them kubetrain's. Pure; `adopt_api.py` lists and patches.

Kubeflow's operator labels a job's pods and Services `training.kubeflow.org/job-name`,
`replica-type` (lower case) and `replica-index`, names them `<job>-<type>-<index>` like kubetrain
does, and sets a controller ownerReference to the job (`kubeflow.org/v1`, the job's uid). Such an
object lacks kubetrain's `kubetrain.io/job-name`, so the controller's caches (label-selected)
never see it and the job would try to create a pod of the same name. Adopting it means adding
kubetrain's labels — nothing else changes: the pod keeps running, its restartCount counts
towards the job's restarts, and ownership still comes from the ownerReference alone.

An object is adopted only when its controller ownerReference names a kind kubetrain serves in
`kubeflow.org`, the Kubeflow job-name label agrees with it, and (pods) the replica type is one of
the kind's and the index an integer. The job's uid is checked by the caller against the stored
job (and the job's `runPolicy.managedBy`: another controller's job is left alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.groups import KUBEFLOW_GROUP, group_of
from kubetrain.api.labels import (
    ANNOTATION_ADOPTED,
    ANNOTATION_SERVICE_MODE,
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
)
from kubetrain.api.servicemode import SERVICE_MODES
from kubetrain.frameworks.registry import FRAMEWORKS

# What to list: Kubeflow's objects kubetrain has not labelled yet.
ADOPTION_SELECTOR = f"{KUBEFLOW_LABEL_JOB_NAME},!{LABEL_JOB_NAME}"
ADOPTED_FROM = "kubeflow.org/training-operator"  # the value of `kubetrain.io/adopted-from`


@dataclass(frozen=True, slots=True)
class Owner:
    """The job an object's controller ownerReference names."""

    kind: str
    name: str
    uid: str


def kubeflow_owner(obj: Mapping[str, Any]) -> Owner | None:
    """The kubeflow.org job of a kind kubetrain serves that controls `obj` (None otherwise)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if not isinstance(ref, Mapping) or ref.get("controller") is not True:
            continue
        kind, name, uid = ref.get("kind"), ref.get("name"), ref.get("uid")
        if group_of(ref.get("apiVersion")) != KUBEFLOW_GROUP or kind not in FRAMEWORKS:
            return None
        if not isinstance(name, str) or not isinstance(uid, str) or not name or not uid:
            return None
        return Owner(str(kind), name, uid)
    return None


def adoption_labels(obj: Mapping[str, Any], owner: Owner, *, pod: bool) -> dict[str, str] | None:
    """kubetrain's labels for a Kubeflow-made pod (`pod=True`) or Service of `owner`'s job, or
    None when its Kubeflow labels do not describe a slot of that job (left alone)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(KUBEFLOW_LABEL_JOB_NAME) != owner.name:
        return None
    out = {LABEL_JOB_NAME: owner.name, LABEL_JOB_KIND: owner.kind, LABEL_MANAGED_BY: MANAGED_BY_VALUE}
    rtype = str(labels.get(KUBEFLOW_LABEL_REPLICA_TYPE) or "")
    index = str(labels.get(KUBEFLOW_LABEL_REPLICA_INDEX) or "")
    known = {t.lower() for t in FRAMEWORKS[owner.kind].replica_types}
    if rtype.lower() in known and index.isdigit():
        out[LABEL_REPLICA_TYPE] = rtype.lower()
        out[LABEL_REPLICA_INDEX] = str(int(index))
    elif pod:
        return None
    if pod and labels.get(KUBEFLOW_LABEL_JOB_ROLE) == "master":
        out[LABEL_JOB_ROLE] = "master"
    return out


def label_patch(obj: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """A JSON merge patch adding `labels`, guarded by the object's resourceVersion (a pod that
    changed meanwhile answers 409 and is looked at again)."""
    meta = obj.get("metadata") or {}
    return {"metadata": {"labels": dict(labels), "resourceVersion": meta.get("resourceVersion")}}


def adopted_job_patch(job: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch marking a job whose objects were adopted `kubetrain.io/adopted-from`, or
    None when nothing is to write (marked already, or its author chose its service mode). The
    mark makes it run in per-pod service mode (kubetrain.api.servicemode): Kubeflow's pods have no
    hostname or subdomain and reach their peers at Kubeflow's per-pod Service names, so a pod
    kubetrain recreates for the job must use those names and find its own Service there."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ANNOTATION_ADOPTED) or annotations.get(ANNOTATION_SERVICE_MODE) in SERVICE_MODES:
        return None
    return {"metadata": {"annotations": {ANNOTATION_ADOPTED: ADOPTED_FROM}}}
