"""XGBoost: XGBoostJob replica types (Master, Worker), MASTER_*/WORKER_* environment and success
rules (docs/behaviour.md §1, §3-§5), as Kubeflow's training-operator v1 runs XGBoostJobs."""

from __future__ import annotations

from collections.abc import Mapping

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError, forbidden, required
from kubetrain.api.xgboostjob import XGBoostJob
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.checks import replica_count, replica_path
from kubetrain.frameworks.env import JobLayout, ReplicaCounts, env_var


class XGBoost(Framework):
    kind = "XGBoostJob"
    kubeflow_framework_name = "xgboost"  # training-operator's GetFrameworkName()
    kubedl_kind = True
    kubedl_controller_name = "XGBoostController"  # KubeDL's controllerName
    kubedl_dag = (("Worker", "Master"),)  # setDefaultXGBoostDAGConditions
    kubedl_container_name = "xgboostjob"  # KubeDL's XGBoostJobDefaultContainerName
    plural = "xgboostjobs"
    singular = "xgboostjob"
    short_names: tuple[str, ...] = ("xgbj",)
    job_model: type[JobBase] = XGBoostJob
    replica_field = "xgbReplicaSpecs"
    replica_types: tuple[str, ...] = ("Master", "Worker")
    master_types: tuple[str, ...] = ("Master",)
    container_name = "xgboost"
    port_name = "xgboostjob-port"
    default_port = 9999
    default_restart_policy = "Never"
    framework_container_required = True
    operator_env_names = frozenset(
        {
            "MASTER_ADDR",
            "MASTER_PORT",
            "WORLD_SIZE",
            "RANK",
            "PYTHONUNBUFFERED",
            "WORKER_PORT",
            "WORKER_ADDRS",
        }
    )

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """Exactly one Master; the named container is a shared rule
        (`framework_container_required`; Kubeflow's webhook, validateXGBReplicaSpecs)."""
        if not isinstance(job, XGBoostJob):
            return []
        replicas = job.spec.xgb_replica_specs or {}
        errors: list[FieldError] = []
        if "Master" not in replicas:
            errors.append(
                required(
                    replica_path(base_path, self.replica_field, "Master"),
                    "an XGBoostJob needs a Master (replicas: 1): it is the Rabit tracker "
                    "every Worker connects to (MASTER_ADDR)",
                )
            )
        elif replica_count(replicas["Master"]) != 1:
            errors.append(
                forbidden(
                    replica_path(base_path, self.replica_field, "Master") + ".replicas",
                    "must be 1 (an XGBoostJob has exactly one Master)",
                )
            )
        return errors

    # --- engine (docs/behaviour.md §4-§5) ----------------------------------------------------------
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
        return xgboost_cluster_env(job, replica_type, index)

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        return xgboost_succeeded(job, counts)


def xgboost_cluster_env(job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
    """As Kubeflow's SetPodEnv, in every container, whatever the job's size: MASTER_PORT and
    MASTER_ADDR (Master 0), WORLD_SIZE (all pods), RANK (Master 0, Worker i → i + Masters),
    PYTHONUNBUFFERED=1; with more than one pod also WORKER_PORT and WORKER_ADDRS (the Worker
    addresses LightGBM's launcher reads: one per pod but the Master)."""
    if "Master" not in job.replicas:
        return []  # validation refuses such a job
    world_size = job.total_replicas
    rank = index + job.count("Master") if replica_type == "Worker" else index
    env = [
        env_var("MASTER_PORT", job.port("Master")),
        env_var("MASTER_ADDR", job.pod_host("Master", 0)),
        env_var("WORLD_SIZE", world_size),
        env_var("RANK", rank),
        env_var("PYTHONUNBUFFERED", "1"),
    ]
    if world_size > 1 and "Worker" in job.replicas:
        env += [
            env_var("WORKER_PORT", job.port("Worker")),
            env_var("WORKER_ADDRS", ",".join(job.pod_host("Worker", i) for i in range(world_size - 1))),
        ]
    return env


def xgboost_succeeded(job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
    """The Master succeeded (Kubeflow's UpdateJobStatus: the job is done when the Master is)."""
    if not job.has("Master"):
        return False
    master = counts.get("Master", ReplicaCounts())
    wanted = job.count("Master")
    return sum(1 for i in master.succeeded_indices if i < wanted) >= wanted


FRAMEWORK = XGBoost()
