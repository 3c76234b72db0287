"""The objects kubetrain makes for a job's TensorBoard (`kubetrain.jobs.tensorboard` parses the
`kubedl.io/tensorboard-config` annotation and names them): the pod, made from the source replica
type's template, its ClusterIP Service and, with `ingressSpec`, its Ingress — each owned by the
job, labelled as KubeDL labels them in `training.kubedl.io`. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.groups import KUBEDL_GROUP, group_of
from kubetrain.api.labels import (
    KUBEDL_LABEL_GROUP_NAME,
    KUBEDL_LABEL_JOB_NAME,
    KUBEDL_LABEL_REPLICA_INDEX,
    KUBEDL_LABEL_REPLICA_TYPE,
    LABEL_JOB_KIND,
    LABEL_JOB_NAME,
    LABEL_MANAGED_BY,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    MANAGED_BY_VALUE,
)
from kubetrain.jobs.tensorboard import (
    ANNOTATION_HASH,
    CONTAINER,
    LABEL_TENSORBOARD_OF,
    PORT,
    REPLICA_TYPE,
    TensorBoardConfig,
    name_of,
    path_prefix,
    pod_name,
)

# Pod template fields the TensorBoard pod takes from the job's source replica type (`source_replica`).
_POD_FIELDS = (
    "volumes",
    "nodeSelector",
    "tolerations",
    "affinity",
    "serviceAccountName",
    "imagePullSecrets",
    "securityContext",
    "priorityClassName",
)


@dataclass(frozen=True)
class JobRef:
    """What the TensorBoard objects need to know of their job."""

    kind: str
    api_version: str
    name: str
    namespace: str
    uid: str
    pod_labels: Mapping[str, str] = field(default_factory=dict)  # the job's tenancy labels

    def owner(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def meta(self, name: str, labels: dict[str, str]) -> dict[str, Any]:
        return {
            "name": name,
            "namespace": self.namespace,
            "labels": labels,
            "ownerReferences": [self.owner()],
        }


_SOURCE_TYPES = ("Chief", "Master", "Worker")


def source_replica(replica_types: Sequence[str]) -> str:
    """The replica type whose template the TensorBoard pod is made from: KubeDL's TFJob
    controller's `getMasterSpec` — Chief, else Master, else Worker (never a PS, which writes no
    summaries) — and for kinds without those (MPIJob's Launcher and Worker have a Worker) the
    first in the framework's order."""
    return next((t for t in _SOURCE_TYPES if t in replica_types), replica_types[0])


def _selector(job: JobRef) -> dict[str, str]:
    return {LABEL_JOB_NAME: job.name, LABEL_REPLICA_TYPE: REPLICA_TYPE.lower()}


def build_pod(
    job: JobRef, cfg: TensorBoardConfig, template: Mapping[str, Any], container_index: int
) -> dict[str, Any]:
    """The TensorBoard pod from the source replica type's template (`source_replica`)."""
    tspec: Mapping[str, Any] = template.get("spec") or {}
    spec: dict[str, Any] = {k: copy.deepcopy(tspec[k]) for k in _POD_FIELDS if k in tspec}
    containers = tspec.get("containers") or []
    framework = containers[container_index] if container_index < len(containers) else {}
    args = ["--logdir", cfg.log_dir, "--host", "0.0.0.0", "--port", str(PORT)]
    served = path_prefix(job.name, job.namespace, cfg)
    if served:
        args += ["--path_prefix", served]
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": cfg.image or framework.get("image", "tensorflow/tensorflow"),
        "command": ["tensorboard", *args],
        "ports": [{"name": CONTAINER, "containerPort": PORT}],
        "readinessProbe": {"httpGet": {"path": f"{served}/", "port": PORT}},
    }
    mounts = framework.get("volumeMounts")
    if mounts:
        container["volumeMounts"] = copy.deepcopy(mounts)
    spec["containers"] = [container]
    spec["restartPolicy"] = "Always"
    labels = {
        **job.pod_labels,
        LABEL_JOB_NAME: job.name,
        LABEL_JOB_KIND: job.kind,
        LABEL_MANAGED_BY: MANAGED_BY_VALUE,
        LABEL_REPLICA_TYPE: REPLICA_TYPE.lower(),
        LABEL_REPLICA_INDEX: "0",
    }
    if group_of(job.api_version) == KUBEDL_GROUP:  # KubeDL's TensorBoard pod labels (syncPod)
        labels[KUBEDL_LABEL_GROUP_NAME] = KUBEDL_GROUP
        labels[KUBEDL_LABEL_JOB_NAME] = job.name
        labels[KUBEDL_LABEL_REPLICA_TYPE] = REPLICA_TYPE.lower()
        labels[KUBEDL_LABEL_REPLICA_INDEX] = "0"
    meta = job.meta(pod_name(job.name), labels)
    meta["annotations"] = {ANNOTATION_HASH: cfg.hash}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _owned_labels(job: JobRef, kubedl: Mapping[str, str]) -> dict[str, str]:
    """The Service's and Ingress's labels; in KubeDL's group KubeDL's too (`kubedl`), which its
    console finds a job's TensorBoard Ingress by (ListIngressInstances: replica-type, job-name)."""
    labels = {LABEL_TENSORBOARD_OF: job.name, LABEL_JOB_KIND: job.kind, LABEL_MANAGED_BY: MANAGED_BY_VALUE}
    if group_of(job.api_version) == KUBEDL_GROUP:
        labels.update(kubedl)
    return labels


_KUBEDL_SERVICE_LABELS = {KUBEDL_LABEL_REPLICA_TYPE: REPLICA_TYPE.lower(), KUBEDL_LABEL_REPLICA_INDEX: "0"}


def build_service(job: JobRef) -> dict[str, Any]:
    # KubeDL's syncService labels its Service replica-type and replica-index.
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": job.meta(name_of(job.name), _owned_labels(job, _KUBEDL_SERVICE_LABELS)),
        "spec": {
            "selector": _selector(job),
            "ports": [{"name": CONTAINER, "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
        },
    }


def build_ingress(job: JobRef, cfg: TensorBoardConfig) -> dict[str, Any] | None:
    if not cfg.has_ingress:
        return None
    # KubeDL's syncIngress: its GenLabels (group-name, job-name) with replica-type and -index.
    kubedl = {
        KUBEDL_LABEL_GROUP_NAME: KUBEDL_GROUP,
        KUBEDL_LABEL_JOB_NAME: job.name,
        **_KUBEDL_SERVICE_LABELS,
    }
    meta = job.meta(name_of(job.name), _owned_labels(job, kubedl))
    meta["annotations"] = {**cfg.ingress_annotations, ANNOTATION_HASH: cfg.hash}
    rule: dict[str, Any] = {
        "http": {
            "paths": [
                {
                    "path": f"{path_prefix(job.name, job.namespace, cfg)}/",  # KubeDL's, with its `/`
                    "pathType": "Prefix",
                    "backend": {"service": {"name": name_of(job.name), "port": {"number": PORT}}},
                }
            ]
        }
    }
    if cfg.ingress_host:
        rule["host"] = cfg.ingress_host
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": meta,
        "spec": {"rules": [rule]},
    }
