"""TensorFlow: TFJob replica types, TF_CONFIG and success rules."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubetrain.api.common import JobBase
from kubetrain.api.errors import RECREATE, FieldError, forbidden
from kubetrain.api.tfjob import TFJob
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.checks import replica_count, replica_path
from kubetrain.frameworks.env import JobLayout, ReplicaCounts, env_var


class TensorFlow(Framework):
    kind = "TFJob"
    kubeflow_framework_name = "tensorflow"  # training-operator's GetFrameworkName()
    kubedl_kind = True
    kubedl_controller_name = "TensorFlowController"  # KubeDL's controllerName
    kubedl_dag = (("Worker", "PS"), ("Chief", "PS"), ("Master", "PS"))  # setDefaultTFDAGCondition
    plural = "tfjobs"
    singular = "tfjob"
    short_names: tuple[str, ...] = ("tfj",)
    job_model: type[JobBase] = TFJob
    replica_field = "tfReplicaSpecs"
    replica_types: tuple[str, ...] = ("Chief", "Master", "PS", "Worker", "Evaluator")
    master_types: tuple[str, ...] = ("Chief", "Master")
    container_name = "tensorflow"
    port_name = "tfjob-port"
    default_port = 2222
    default_restart_policy = "Never"
    operator_env_names = frozenset({"TF_CONFIG"})
    # TF_CONFIG goes into the framework container only (docs/behaviour.md §4, Decision).
    cluster_env_framework_container_only = True
    # Kubeflow's TF_CONFIG names a pod's Service as `<pod>.<ns>.svc`.
    per_pod_host_format = "{pod}.{namespace}.svc"

    def validate_update(self, spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[FieldError]:
        """successPolicy is immutable."""
        if (spec.get("successPolicy") or "") != (old_spec.get("successPolicy") or ""):
            return [forbidden("spec.successPolicy", f"is immutable: {RECREATE}")]
        return []

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """At most one of Chief and Master, with at most one replica."""
        if not isinstance(job, TFJob):
            return []
        replicas = job.spec.tf_replica_specs or {}
        errors: list[FieldError] = []
        leaders = [t for t in ("Chief", "Master") if t in replicas]
        if len(leaders) > 1:
            errors.append(
                forbidden(
                    replica_path(base_path, self.replica_field, "Master"),
                    "a TFJob may have a Chief or a Master, not both: remove one of them",
                )
            )
        for rtype in leaders:
            if replica_count(replicas[rtype]) > 1:
                errors.append(
                    forbidden(
                        replica_path(base_path, self.replica_field, rtype) + ".replicas",
                        f"must be 0 or 1 (a TFJob has at most one {rtype})",
                    )
                )
        return errors

    # --- engine (docs/behaviour.md §4-§5) ----------------------------------------------------------
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
        return tf_cluster_env(job, replica_type, index)

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        return tf_succeeded(job, counts)


def tf_config(job: JobLayout, replica_type: str, index: int) -> dict[str, Any]:
    """TF_CONFIG: every replica type of the spec (Evaluator included), addresses by index.

    With `enableDynamicWorker: true` it is sparse, as Kubeflow writes it for TensorFlow's
    dynamic membership: a Worker sees the PS and only itself (`{"<index>": address}`), a PS
    only itself, any other type neither; and there is no `environment`.

    A cluster domain the operator was given is appended to every host (`<pod>.<job>.<ns>.svc.
    <domain>`), as training-operator does with `CUSTOM_CLUSTER_DOMAIN`; none given, the hosts
    end in `.svc` (`ClusterDomain.qualify`)."""
    address = _qualified_address if job.cluster_domain.configured else JobLayout.pod_address
    cluster = {r.lower: [address(job, t, i) for i in range(r.replicas)] for t, r in job.replicas.items()}
    task = {"type": replica_type.lower(), "index": index}
    if job.spec.get("enableDynamicWorker") is True:
        sparse: dict[str, Any] = {"worker": {}, "ps": []}
        if replica_type == "PS":
            sparse["ps"] = [cluster["ps"][index]]
        elif replica_type == "Worker":
            sparse["ps"] = cluster.get("ps", [])
            sparse["worker"] = {str(index): cluster["worker"][index]}
        return {"cluster": sparse, "task": task}
    return {"cluster": cluster, "task": task, "environment": "cloud"}


def _qualified_address(job: JobLayout, replica_type: str, index: int) -> str:
    host = job.cluster_domain.qualify(job.pod_host(replica_type, index))
    return f"{host}:{job.pod_port(replica_type, index)}"


def tf_cluster_env(job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
    if job.is_standalone:
        return []
    value = json.dumps(tf_config(job, replica_type, index), separators=(",", ":"))
    return [env_var("TF_CONFIG", value)]


def tf_succeeded(job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
    """Chief/Master succeeded if present; else all Workers, or Worker 0 unless AllWorkers."""
    empty = ReplicaCounts()
    for master in ("Chief", "Master"):
        if job.has(master):
            return _all_done(job, master, counts.get(master, empty))
    if job.has("Worker"):
        workers = counts.get("Worker", empty)
        if _all_done(job, "Worker", workers):
            return True
        return job.spec.get("successPolicy") != "AllWorkers" and 0 in workers.succeeded_indices
    # Neither Chief/Master nor Worker (e.g. PS only): every pod of every type must succeed.
    return job.total_replicas > 0 and all(
        _all_done(job, t, counts.get(t, empty)) for t in job.replicas if job.has(t)
    )


def _all_done(job: JobLayout, replica_type: str, c: ReplicaCounts) -> bool:
    wanted = job.count(replica_type)
    return sum(1 for i in c.succeeded_indices if i < wanted) >= wanted


FRAMEWORK = TensorFlow()
