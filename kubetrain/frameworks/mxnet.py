"""MXNet: MXJob replica types, DMLC_*/MX_CONFIG environment and success rules."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError, forbidden, invalid, required
from kubetrain.api.mxjob import MXJob
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.checks import listing, replica_count, replica_path
from kubetrain.frameworks.env import JobLayout, ReplicaCounts, env_var

DEFAULT_JOB_MODE = "MXTrain"


class MXNet(Framework):
    kind = "MXJob"
    kubeflow_framework_name = "mxnet"  # training-operator's GetFrameworkName()
    plural = "mxjobs"
    singular = "mxjob"
    short_names: tuple[str, ...] = ("mxj",)
    job_model: type[JobBase] = MXJob
    replica_field = "mxReplicaSpecs"
    replica_types: tuple[str, ...] = ("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner")
    master_types: tuple[str, ...] = ("Scheduler",)
    container_name = "mxnet"
    port_name = "mxjob-port"
    default_port = 9091
    default_restart_policy = "Never"
    operator_env_names = frozenset(
        {
            "DMLC_PS_ROOT_URI",
            "DMLC_PS_ROOT_PORT",
            "DMLC_NUM_SERVER",
            "DMLC_NUM_WORKER",
            "DMLC_ROLE",
            "DMLC_USE_KUBERNETES",
            "DMLC_WORKER_ID",
            "MX_CONFIG",
        }
    )

    def default_spec(self, spec: dict[str, Any], counts: Mapping[Any, int | None]) -> list[str]:
        """jobMode defaults to MXTrain."""
        if spec.get("jobMode") is None:
            spec["jobMode"] = DEFAULT_JOB_MODE
        return []

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """MXTrain is local (one Worker; a Scheduler or Server of 0 replicas may be listed) or
        distributed (one Scheduler, Workers, any number of Servers); MXTune needs TunerTracker,
        TunerServer and Tuner."""
        if not isinstance(job, MXJob):
            return []
        replicas = job.spec.mx_replica_specs or {}
        mode = job.spec.job_mode or DEFAULT_JOB_MODE

        def path(rtype: str) -> str:
            return replica_path(base_path, self.replica_field, rtype)

        errors: list[FieldError] = []
        if mode == "MXTune":
            for rtype in _TUNE_TYPES:
                if rtype not in replicas:
                    errors.append(required(path(rtype), f"jobMode MXTune needs {listing(_TUNE_TYPES)}"))
            for rtype in _TRAIN_TYPES:
                if rtype in replicas:
                    errors.append(
                        forbidden(
                            path(rtype), f"not allowed in jobMode MXTune (it runs {listing(_TUNE_TYPES)})"
                        )
                    )
            return errors
        for rtype in _TUNE_TYPES:
            if rtype in replicas:
                errors.append(
                    forbidden(
                        path(rtype), f"not allowed in jobMode MXTrain ({rtype} belongs to jobMode MXTune)"
                    )
                )
        # A Scheduler or Server of 0 replicas makes no pod: the job is local, as training-operator
        # runs it (`isSingleWorker`, mxnet-operator issue 32). Servers may be 0 (or absent) in a
        # distributed job: training-operator admits it and runs the Scheduler and Workers with
        # DMLC_NUM_SERVER=0.
        if replica_count(replicas.get("Scheduler")) > 0 or replica_count(replicas.get("Server")) > 0:
            dist = "a distributed MXTrain job (with a Scheduler or Servers)"
            if "Scheduler" not in replicas:
                errors.append(required(path("Scheduler"), f"{dist} needs exactly one Scheduler"))
            elif replica_count(replicas["Scheduler"]) != 1:
                errors.append(
                    forbidden(
                        path("Scheduler") + ".replicas", f"must be 1 ({dist} has exactly one Scheduler)"
                    )
                )
            if "Worker" not in replicas:
                errors.append(required(path("Worker"), f"{dist} needs at least one Worker"))
            elif replica_count(replicas["Worker"]) < 1:
                errors.append(invalid(path("Worker") + ".replicas", f"must be at least 1 in {dist}"))
            return errors
        if "Worker" not in replicas:
            errors.append(
                required(
                    path("Worker"),
                    "jobMode MXTrain needs a Worker (local training: one Worker; "
                    "distributed training: a Scheduler, Servers and Workers)",
                )
            )
        elif replica_count(replicas["Worker"]) > 1:
            errors.append(
                forbidden(
                    path("Worker") + ".replicas",
                    "must be 0 or 1 in a local MXTrain job (no Scheduler or Server with replicas); "
                    "add a Scheduler and Servers for distributed training",
                )
            )
        return errors

    # --- engine (docs/behaviour.md §4-§5) ----------------------------------------------------------
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
        return mxnet_cluster_env(job, replica_type, index)

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        return mxnet_succeeded(job, counts)


_TRAIN_TYPES = ("Scheduler", "Server", "Worker")
_TUNE_TYPES = ("TunerTracker", "TunerServer", "Tuner")


TUNER_SERVER_KEY_ANNOTATION = "tuner-server-key"


def mx_config(job: JobLayout, replica_type: str, index: int) -> dict[str, Any]:
    """MX_CONFIG: `{"cluster": {type: [{"url", "port"}]}, "labels": {type: key}, "task": {"type",
    "index"}}`. `labels` maps every replica type to its pod template's `tuner-server-key`
    annotation ("" without one): the key MXTune's TVM RPC servers register under."""
    cluster = {
        r.lower: [{"url": job.pod_host(t, i), "port": job.pod_port(t, i)} for i in range(r.replicas)]
        for t, r in job.replicas.items()
    }
    labels = {r.lower: _tuner_server_key(r.template) for r in job.replicas.values()}
    return {"cluster": cluster, "labels": labels, "task": {"type": replica_type.lower(), "index": index}}


def _tuner_server_key(template: Mapping[str, Any]) -> str:
    meta = template.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    value = annotations.get(TUNER_SERVER_KEY_ANNOTATION) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) else ""


def mxnet_cluster_env(job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
    """MX_CONFIG and the DMLC_* variables ps-lite reads, for every job (a local one too).

    DMLC_PS_ROOT_URI/PORT point at Scheduler 0; a job without a Scheduler (local, MXTune) gets
    them empty and 0, as Kubeflow sets them. DMLC_ROLE is the lower-case replica type;
    DMLC_WORKER_ID is set on Workers only.
    """
    scheduler = job.has("Scheduler")
    env = [
        env_var("MX_CONFIG", json.dumps(mx_config(job, replica_type, index), separators=(",", ":"))),
        env_var("DMLC_PS_ROOT_PORT", job.port("Scheduler") if scheduler else 0),
        env_var("DMLC_PS_ROOT_URI", job.pod_host("Scheduler", 0) if scheduler else ""),
        env_var("DMLC_NUM_SERVER", job.count("Server")),
        env_var("DMLC_NUM_WORKER", job.count("Worker")),
        env_var("DMLC_ROLE", replica_type.lower()),
        env_var("DMLC_USE_KUBERNETES", "1"),
    ]
    if replica_type == "Worker":
        env.append(env_var("DMLC_WORKER_ID", index))
    return env


def mxnet_succeeded(job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
    """Scheduler succeeded (distributed); the Tuner (MXTune); else every Worker (local)."""
    empty = ReplicaCounts()
    for decider in ("Scheduler", "Tuner", "Worker"):
        if job.has(decider):
            c = counts.get(decider, empty)
            wanted = job.count(decider)
            return sum(1 for i in c.succeeded_indices if i < wanted) >= wanted
    return False


FRAMEWORK = MXNet()
