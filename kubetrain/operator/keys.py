"""Which job an object belongs to, as the controller's queue keys it — pure.

Keys are `Kind/namespace/name`, where `Kind` is a `job_resource_id`: "TFJob" (kubetrain.io) or
"TFJob.kubeflow.org". A child belongs to the job its controller ownerReference names; a pod no
job controls any more is matched to a job by its kubetrain.io/job-name and job-kind labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.groups import JOB_GROUPS, KUBETRAIN_GROUP, group_of
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.kube.cache import JOB_KIND_LABEL, JOB_NAME_LABEL
from kubetrain.kube.resources import job_resource_id
from kubetrain.operator.trainjobs import TRAINJOB_RESOURCE_ID, is_trainjob_owner


def job_key(kind: str, namespace: str, name: str) -> str:
    """`kind` is a `job_resource_id`: "TFJob" (kubetrain.io) or "TFJob.kubeflow.org"."""
    return f"{kind}/{namespace}/{name}"


def split_job_key(key: str) -> tuple[str, str, str]:
    kind, namespace, name = key.split("/", 2)
    return kind, namespace, name


def owner_job_key(obj: Mapping[str, Any]) -> str | None:
    """The key of the job that controls `obj` (its controller ownerReference), if any."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        group = group_of(ref.get("apiVersion"))
        if ref.get("controller") and ref.get("kind") in FRAMEWORKS and group in JOB_GROUPS:
            rid = job_resource_id(ref["kind"], group)
            return job_key(rid, meta.get("namespace", ""), ref.get("name", ""))
        if ref.get("controller") and is_trainjob_owner(ref):
            return job_key(TRAINJOB_RESOURCE_ID, meta.get("namespace", ""), ref.get("name", ""))
    return None


def labelled_job_key(pod: Mapping[str, Any], group: str = KUBETRAIN_GROUP) -> str | None:
    """The key of the job of `group` that a pod's kubetrain.io/job-name and job-kind labels name."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    name, kind = labels.get(JOB_NAME_LABEL), labels.get(JOB_KIND_LABEL)
    if isinstance(name, str) and name and kind in FRAMEWORKS:
        return job_key(job_resource_id(str(kind), group), meta.get("namespace", ""), name)
    return None


def resource_version(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


def status_only(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether `new` differs from `old` in status (and resourceVersion) only: same generation
    (the spec), same metadata otherwise (labels, annotations, deletionTimestamp, finalizers)."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if old_meta.get("generation") != new_meta.get("generation") or len(old_meta) != len(new_meta):
        return False
    return all(v == old_meta.get(k) for k, v in new_meta.items() if k != "resourceVersion")


def key_of(job: Mapping[str, Any]) -> str:
    meta = job.get("metadata") or {}
    rid = job_resource_id(str(job.get("kind")), group_of(job.get("apiVersion")) or KUBETRAIN_GROUP)
    return job_key(rid, meta.get("namespace", ""), meta.get("name", ""))
