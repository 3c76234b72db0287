"""The children that stand for a job as a whole, built exactly as docs/behaviour.md §4 and §8
say (the pods and Services are `children.py`'s). Pure; used by the planner and by `kubetrain
render`.

- A PodGroup named after the job, in the API of the configured gang scheduler
  (`kubetrain.api.gangschedulers`), holding `minMember` of the job's gang slots and what they
  request.
- When the framework says the job asks for autoscaling (`Framework.autoscaling`: an elastic
  PyTorchJob with metrics), an `autoscaling/v2` HorizontalPodAutoscaler named after the job that
  scales the job itself (its scale subresource) within the bounds the framework gives.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from kubetrain.api.gangschedulers import gang_scheduler as gang_scheduler_of
from kubetrain.api.labels import ANNOTATION_HPA_SPEC_HASH
from kubetrain.api.podresources import sum_pods_resources
from kubetrain.frameworks.env import JobLayout
from kubetrain.jobs.shape import EnvPlugin, JobShape
from kubetrain.operator.children import job_labels, owner_reference

HPA_API_VERSION = "autoscaling/v2"
# Not copied onto the PodGroup: kubectl's record of the job's whole manifest (it describes the
# job, not the group, and would double the PodGroup's size).
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def min_member(shape: JobShape) -> int:
    """`minAvailable`, at most the pods the gang can hold (a value counting a group left out of
    the gang — set before the dependency, or by the user — could never be met), else every gang
    slot (`JobShape.gang_slots`)."""
    slots = len(shape.gang_slots())
    value = shape.run_policy.scheduling.min_available
    if value is not None:
        return min(value, slots) if slots > 0 else value
    return slots if slots > 0 else shape.total_replicas


def min_resources(shape: JobShape) -> dict[str, str]:
    """What the scheduler reserves for the first minMember gang pods, in priority order: per
    pod its containers' requests (limits where no request), sidecars and init containers
    counted as the scheduler counts them (`kubetrain.api.podresources.pod_amounts`)."""
    slots = shape.gang_slots()[: min_member(shape)]
    per_group = Counter(group for group, _ in slots)  # in priority order of first appearance
    return sum_pods_resources((shape.groups[group].template, n) for group, n in per_group.items())


def pod_group_annotations(job: JobLayout) -> dict[str, str]:
    """The job's annotations, which its PodGroup carries as training-operator's
    `JobController.SyncPodGroup` gives them (`newPodGroup.SetAnnotations(job.GetAnnotations())`):
    Volcano reads a PodGroup's own annotations for job-level settings (`volcano.sh/preemptable`,
    `sla-waiting-time`, `volcano.sh/jdb-min-available`, the task-topology plugin's), which
    users put on the job. All but kubectl's last-applied-configuration."""
    return {str(k): str(v) for k, v in job.annotations.items() if k != LAST_APPLIED and isinstance(v, str)}


def build_pod_group(shape: JobShape, gang_scheduler: str) -> dict[str, Any] | None:
    """The job's PodGroup for the configured gang scheduler (None for `none`), from the job's
    scheduling policy (`JobShape.run_policy.scheduling`) and annotations."""
    gang = gang_scheduler_of(gang_scheduler)
    if gang is None:
        return None
    job, policy = shape.layout, shape.run_policy.scheduling
    given = policy.min_resources
    resources = dict(given) if given is not None else min_resources(shape)
    spec = gang.pod_group_spec(min_member(shape), resources, policy.by_field_name(), job.annotations)
    if policy.network_topology:
        spec["networkTopology"] = dict(policy.network_topology)
    metadata: dict[str, Any] = {
        "name": job.name,
        "namespace": job.namespace,
        "labels": job_labels(job),
        "ownerReferences": [owner_reference(job)],
    }
    annotations = pod_group_annotations(job)
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": gang.api_version, "kind": gang.kind, "metadata": metadata, "spec": spec}


def hpa_spec(job: JobLayout, framework: EnvPlugin) -> dict[str, Any] | None:
    """The HPA spec the job asks for (None when the framework says it asks for none)."""
    scaling = framework.autoscaling(job)
    if scaling is None:
        return None
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": job.api_version, "kind": job.kind, "name": job.name},
    }
    if scaling.min_replicas is not None:
        spec["minReplicas"] = scaling.min_replicas
    if scaling.max_replicas is not None:
        spec["maxReplicas"] = scaling.max_replicas
    spec["metrics"] = copy.deepcopy(scaling.metrics)
    return spec


def hpa_spec_hash(spec: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def build_hpa(job: JobLayout, framework: EnvPlugin) -> dict[str, Any] | None:
    """The job's HorizontalPodAutoscaler (None when the job asks for none)."""
    spec = hpa_spec(job, framework)
    if spec is None:
        return None
    return {
        "apiVersion": HPA_API_VERSION,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": job_labels(job),
            "annotations": {ANNOTATION_HPA_SPEC_HASH: hpa_spec_hash(spec)},
            "ownerReferences": [owner_reference(job)],
        },
        "spec": spec,
    }
