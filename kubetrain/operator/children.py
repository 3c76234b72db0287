"""The objects a job owns, built exactly as docs/behaviour.md §4 and §8 say: pods and the
headless Service(s) (the PodGroup and HPA, which stand for the whole job, are `jobchildren.py`'s).
Pure; used by the planner and by `kubetrain render`.

- Pod `<job>-<lower(type)>-<index>`, `hostname` = pod name, `subdomain` = job name, labels
  (operator labels override template labels of the same key), controller ownerReference,
  `restartPolicy` from the replica spec (ExitCode → Never), the framework's cluster variables
  appended to every container unless the container already sets that name, the framework
  container's named port added when missing, and the gang scheduler's schedulerName,
  annotations and labels.
- One headless Service per job, named after it, selecting `kubetrain.io/job-name` — or, in
  per-pod service mode (`kubetrain.api.servicemode`), one headless Service per pod.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from kubetrain.api.gangschedulers import NONE
from kubetrain.api.gangschedulers import gang_scheduler as gang_scheduler_of
from kubetrain.api.groups import KUBEDL_GROUP, KUBEFLOW_GROUP, group_of
from kubetrain.api.labels import (
    KUBEDL_LABEL_GROUP_NAME,
    KUBEDL_LABEL_JOB_NAME,
    KUBEDL_LABEL_JOB_ROLE,
    KUBEDL_LABEL_REPLICA_INDEX,
    KUBEDL_LABEL_REPLICA_TYPE,
    KUBEFLOW_LABEL_JOB_NAME,
    KUBEFLOW_LABEL_JOB_ROLE,
    KUBEFLOW_LABEL_OPERATOR_NAME,
    KUBEFLOW_LABEL_REPLICA_INDEX,
    KUBEFLOW_LABEL_REPLICA_TYPE,
    LABEL_ATTEMPT,
    LABEL_JOB_KIND,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_MANAGED_BY,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    MANAGED_BY_VALUE,
)
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.env import JobLayout, ReplicaLayout
from kubetrain.jobs.codesync import add_code_sync
from kubetrain.jobs.shape import EnvPlugin
from kubetrain.jobs.tenancy import labels_of_annotations


def owner_reference(job: JobLayout) -> dict[str, Any]:
    return {
        "apiVersion": job.api_version,
        "kind": job.kind,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def job_labels(job: JobLayout) -> dict[str, str]:
    """Labels on every child: which job owns it and who manages it."""
    return {
        LABEL_JOB_NAME: job.name,
        LABEL_JOB_KIND: job.kind,
        LABEL_MANAGED_BY: MANAGED_BY_VALUE,
    }


def replica_selector(job: JobLayout, replica_type: str) -> str:
    """The label selector string of one replica type (status.replicaStatuses[*].selector)."""
    return f"{LABEL_JOB_NAME}={job.name},{LABEL_REPLICA_TYPE}={replica_type.lower()}"


def master_slot(job: JobLayout, framework: EnvPlugin) -> tuple[str, int] | None:
    """The pod that carries `kubetrain.io/job-role: master`: pod 0 of the first master type
    present (Chief/Master, Scheduler), else Worker 0."""
    for rtype in framework.master_types:
        if job.has(rtype):
            return rtype, 0
    if job.has("Worker"):
        return "Worker", 0
    return None


def pod_labels(job: JobLayout, framework: EnvPlugin, replica_type: str, index: int) -> dict[str, str]:
    labels = labels_of_annotations(job.annotations)  # KubeDL's tenancy (jobs/tenancy.py)
    labels.update(job_labels(job))
    labels[LABEL_REPLICA_TYPE] = replica_type.lower()
    labels[LABEL_REPLICA_INDEX] = str(index)
    master = master_slot(job, framework) == (replica_type, index)
    if master:
        labels[LABEL_JOB_ROLE] = "master"
    kubeflow = (
        framework.kubeflow_pod_labels(job, replica_type, index) if isinstance(framework, Framework) else None
    )
    if group_of(job.api_version) == KUBEFLOW_GROUP and kubeflow is not None:
        labels.update(kubeflow)  # the kind's own rule (MPIJob: frameworks/mpilabels.py)
    elif group_of(job.api_version) == KUBEFLOW_GROUP:  # Kubeflow's labels too (api/labels.py)
        labels[KUBEFLOW_LABEL_OPERATOR_NAME] = f"{job.kind.lower()}-controller"
        labels[KUBEFLOW_LABEL_JOB_NAME] = job.name
        labels[KUBEFLOW_LABEL_REPLICA_TYPE] = replica_type.lower()
        labels[KUBEFLOW_LABEL_REPLICA_INDEX] = str(index)
        if master:
            labels[KUBEFLOW_LABEL_JOB_ROLE] = "master"
    if group_of(job.api_version) == KUBEDL_GROUP:  # KubeDL's labels too (api/labels.py)
        labels[KUBEDL_LABEL_GROUP_NAME] = KUBEDL_GROUP
        labels[KUBEDL_LABEL_JOB_NAME] = job.name
        labels[KUBEDL_LABEL_REPLICA_TYPE] = replica_type.lower()
        labels[KUBEDL_LABEL_REPLICA_INDEX] = str(index)
        if master:
            labels[KUBEDL_LABEL_JOB_ROLE] = "master"
    return labels


def pod_restart_policy(replica_policy: str) -> str:
    """ExitCode is the operator's policy; the kubelet must not restart such pods itself."""
    return "Never" if replica_policy == "ExitCode" else replica_policy


def scheduler_name(gang_scheduler: str, configured: str | None) -> str | None:
    """The schedulerName pods get (None: leave the cluster default)."""
    if configured:
        return configured
    gang = gang_scheduler_of(gang_scheduler)
    return gang.scheduler_name if gang is not None else None


def build_pod(
    job: JobLayout,
    framework: EnvPlugin,
    replica_type: str,
    index: int,
    *,
    gang_scheduler: str = NONE,
    scheduler: str | None = None,
    attempt: int = 0,
) -> dict[str, Any]:
    """Pod `index` of `replica_type`, ready to create; `attempt` > 0 (the job's `jobRestarts`)
    is labelled so pods of an earlier attempt are told apart."""
    replica = job.replicas[replica_type]
    template = replica.template
    tmeta: Mapping[str, Any] = template.get("metadata") or {}
    name = job.pod_name(replica_type, index)
    labels = dict(tmeta.get("labels") or {})
    labels.update(pod_labels(job, framework, replica_type, index))
    if attempt > 0:
        labels[LABEL_ATTEMPT] = str(attempt)
    annotations = dict(tmeta.get("annotations") or {})
    spec = _copy_spec(template.get("spec") or {})
    gang = gang_scheduler_of(gang_scheduler)
    if gang is not None:
        annotations.update(gang.pod_annotations(job.name, replica_type.lower()))
        labels.update(gang.pod_labels(job.name, replica_type.lower()))
    chosen_scheduler = scheduler_name(gang_scheduler, scheduler)
    if chosen_scheduler and not spec.get("schedulerName"):
        spec["schedulerName"] = chosen_scheduler
    spec["hostname"] = name
    spec["subdomain"] = job.name
    spec["restartPolicy"] = pod_restart_policy(replica.restart_policy)
    _ensure_port(spec, replica, job.port_name)
    if job.host_network:
        _use_host_network(spec, replica, job.port_name, job.pod_port(replica_type, index))
    env = framework.cluster_env(job, replica_type, index)
    only_framework = framework.cluster_env_framework_container_only
    if env:
        for i, container in enumerate(spec.get("containers") or []):
            if isinstance(container, dict) and (not only_framework or i == replica.container_index):
                _append_env(container, env)
    framework.customize_pod(job, replica_type, index, spec)
    add_code_sync(job.annotations, spec)  # KubeDL's git-sync-config (jobs/codesync.py)
    metadata: dict[str, Any] = {"name": name, "namespace": job.namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = [owner_reference(job)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _copy_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a template's spec: an orjson round trip (a template is JSON as the API
    server sent it; ~7x faster than copy.deepcopy, which was most of building a pod), or
    copy.deepcopy for anything JSON has no form for — dates and bytes read from YAML by
    `kubetrain render`, keys that are not strings — which stays as it was."""
    try:
        copied = orjson.loads(orjson.dumps(spec, option=_COPY_OPTIONS))
    except TypeError:  # orjson.JSONEncodeError
        return copy.deepcopy(dict(spec))
    return copied if isinstance(copied, dict) else copy.deepcopy(dict(spec))


# Types orjson would otherwise turn into JSON strings are refused (TypeError), so they keep their type.
_COPY_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _append_env(container: dict[str, Any], env: list[dict[str, Any]]) -> None:
    existing = container.get("env")
    current: list[Any] = list(existing) if isinstance(existing, list) else []
    taken = {e.get("name") for e in current if isinstance(e, Mapping)}
    current.extend(dict(e) for e in env if e["name"] not in taken)
    container["env"] = current


def _ensure_port(spec: dict[str, Any], replica: ReplicaLayout, port_name: str) -> None:
    containers = spec.get("containers") or []
    if not port_name or replica.container_index >= len(containers):
        return
    container = containers[replica.container_index]
    if not isinstance(container, dict):
        return
    ports = container.get("ports")
    if not isinstance(ports, list):
        ports = []
    if any(isinstance(p, Mapping) and p.get("name") == port_name for p in ports):
        return
    container["ports"] = [*ports, {"name": port_name, "containerPort": replica.port}]


def _use_host_network(spec: dict[str, Any], replica: ReplicaLayout, port_name: str, port: int) -> None:
    """Host network mode: the node's network, cluster DNS still first, and the pod's own port as
    containerPort and hostPort (so the scheduler keeps pods claiming one port off one node)."""
    spec["hostNetwork"] = True
    spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    containers = spec.get("containers") or []
    if replica.container_index >= len(containers) or not isinstance(
        containers[replica.container_index], dict
    ):
        return
    container = containers[replica.container_index]
    ports = [dict(p) if isinstance(p, Mapping) else p for p in container.get("ports") or []]
    for p in ports:
        if isinstance(p, dict) and p.get("name") == port_name:
            p["containerPort"] = p["hostPort"] = port
    if not any(isinstance(p, dict) and p.get("name") == port_name for p in ports):
        ports.append({"name": port_name, "containerPort": port, "hostPort": port})
    container["ports"] = ports


def pod_slots(job: JobLayout) -> Iterator[tuple[str, int]]:
    """Every (replica type, index) the job wants, in priority order."""
    for rtype, replica in job.replicas.items():
        for i in range(replica.replicas):
            yield rtype, i


def build_pods(
    job: JobLayout, framework: EnvPlugin, *, gang_scheduler: str = NONE, scheduler: str | None = None
) -> list[dict[str, Any]]:
    """Every pod of the job in priority order (what `kubetrain render` prints)."""
    return [
        build_pod(job, framework, rtype, i, gang_scheduler=gang_scheduler, scheduler=scheduler)
        for rtype, i in pod_slots(job)
    ]


def build_service(job: JobLayout) -> dict[str, Any]:
    """The job's headless Service: every pod resolves at `<pod>.<job>.<ns>.svc` before ready."""
    ports: list[dict[str, Any]] = []
    seen: set[int] = set()
    for replica in job.replicas.values():
        if replica.port in seen:
            continue
        seen.add(replica.port)
        # Port names are unique DNS labels of at most 15 characters.
        name = job.port_name if not ports else f"port-{replica.port}"
        port: dict[str, Any] = {"name": name} if name else {}  # one unnamed port is valid
        port.update({"port": replica.port, "targetPort": replica.port, "protocol": "TCP"})
        ports.append(port)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": job_labels(job),
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {LABEL_JOB_NAME: job.name},
            "ports": ports,
        },
    }


def build_extra_child(job: JobLayout, obj: Mapping[str, Any]) -> dict[str, Any]:
    """A framework's extra child (`Framework.extra_children`) with the job's namespace, labels
    and controller ownerReference added."""
    out = copy.deepcopy(dict(obj))
    meta = out["metadata"] = dict(out.get("metadata") or {})
    meta["namespace"] = job.namespace
    meta["labels"] = {**(meta.get("labels") or {}), **job_labels(job)}
    meta["ownerReferences"] = [owner_reference(job)]
    return out


def build_pod_service(job: JobLayout, replica_type: str, index: int) -> dict[str, Any]:
    """Per-pod service mode: the Service of one pod, in the shape Kubeflow's operator makes —
    named after the pod, headless, selecting the pod by job name, replica type and index, with
    the named ports of the framework container — plus `publishNotReadyAddresses`, so the name
    resolves as soon as the pod has an IP (kubetrain adds no init container that waits)."""
    replica = job.replicas[replica_type]
    containers = (replica.template.get("spec") or {}).get("containers") or []
    container = containers[replica.container_index] if replica.container_index < len(containers) else {}
    ports: list[dict[str, Any]] = []
    for p in (container.get("ports") or []) if isinstance(container, Mapping) else []:
        if isinstance(p, Mapping) and p.get("name") and isinstance(p.get("containerPort"), int):
            protocol = p.get("protocol", "TCP")
            ports.append({"name": p["name"], "port": p["containerPort"], "protocol": protocol})
    if job.port_name and not any(p["name"] == job.port_name for p in ports):
        ports.append({"name": job.port_name, "port": replica.port, "protocol": "TCP"})
    labels = job_labels(job)
    labels[LABEL_REPLICA_TYPE] = replica_type.lower()
    labels[LABEL_REPLICA_INDEX] = str(index)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": job.pod_name(replica_type, index),
            "namespace": job.namespace,
            "labels": labels,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {
                LABEL_JOB_NAME: job.name,
                LABEL_REPLICA_TYPE: replica_type.lower(),
                LABEL_REPLICA_INDEX: str(index),
            },
            "ports": ports,
        },
    }
