"""JAX: JAXJob replica type (Worker), COORDINATOR_*/NUM_PROCESSES/PROCESS_ID environment and
success rules (docs/behaviour.md §1, §3-§5), as Kubeflow's training-operator v1 runs JAXJobs."""

from __future__ import annotations

from collections.abc import Mapping

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError, invalid, required
from kubetrain.api.jaxjob import JAXJob
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.checks import replica_count, replica_path
from kubetrain.frameworks.env import JobLayout, ReplicaCounts, env_var


class JAX(Framework):
    kind = "JAXJob"
    kubeflow_framework_name = "jax"  # training-operator's GetFrameworkName()
    plural = "jaxjobs"
    singular = "jaxjob"
    short_names: tuple[str, ...] = ("jaxj",)
    job_model: type[JobBase] = JAXJob
    replica_field = "jaxReplicaSpecs"
    replica_types: tuple[str, ...] = ("Worker",)
    # No master type: Worker 0 (the coordinator) carries the master role, as in Kubeflow.
    master_types: tuple[str, ...] = ()
    container_name = "jax"
    port_name = "jaxjob-port"
    default_port = 6666
    default_restart_policy = "Never"
    framework_container_required = True
    operator_env_names = frozenset(
        {"PYTHONUNBUFFERED", "COORDINATOR_PORT", "COORDINATOR_ADDRESS", "NUM_PROCESSES", "PROCESS_ID"}
    )

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """Workers (at least one: Worker 0 is the coordinator); the named container is a shared rule
        (`framework_container_required`; Kubeflow's webhook, validateJAXReplicaSpecs)."""
        if not isinstance(job, JAXJob):
            return []
        replicas = job.spec.jax_replica_specs or {}
        errors: list[FieldError] = []
        worker_path = replica_path(base_path, self.replica_field, "Worker")
        if replicas and "Worker" not in replicas:
            errors.append(required(worker_path, "a JAXJob runs its processes as Workers"))
        elif "Worker" in replicas and replica_count(replicas["Worker"]) < 1:
            errors.append(
                invalid(
                    f"{worker_path}.replicas",
                    "must be at least 1 (one JAX process per Worker; Worker 0 is the coordinator)",
                )
            )
        return errors

    # --- engine (docs/behaviour.md §4-§5) ----------------------------------------------------------
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
        return jax_cluster_env(job, replica_type, index)

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        return jax_succeeded(job, counts)


def jax_cluster_env(job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
    """As Kubeflow's setPodEnv, in every container, whatever the job's size: what
    `jax.distributed.initialize` needs — COORDINATOR_ADDRESS (Worker 0's host) and
    COORDINATOR_PORT, NUM_PROCESSES (all pods) and PROCESS_ID (the Worker's index)."""
    if "Worker" not in job.replicas:
        return []  # validation refuses such a job
    return [
        env_var("PYTHONUNBUFFERED", "1"),
        env_var("COORDINATOR_PORT", job.port("Worker")),
        env_var("COORDINATOR_ADDRESS", job.pod_host("Worker", 0)),
        env_var("NUM_PROCESSES", job.total_replicas),
        env_var("PROCESS_ID", index),
    ]


def jax_succeeded(job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
    """Every Worker succeeded (Kubeflow's UpdateJobStatus)."""
    if not job.has("Worker"):
        return False
    workers = counts.get("Worker", ReplicaCounts())
    wanted = job.count("Worker")
    return sum(1 for i in workers.succeeded_indices if i < wanted) >= wanted


FRAMEWORK = JAX()
