"""PaddlePaddle: PaddleJob replica types, elastic Workers (elasticPolicy), PADDLE_* environment and
success rules.

Two modes, chosen by the spec as Kubeflow chooses them: without a Master the job is *collective*
(Workers only; Worker 0 is the rendezvous endpoint of `paddle.distributed.launch`); with a Master
it is *parameter-server* (the Masters run the servers, the Workers the trainers; Master 0 is the
rendezvous endpoint).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError, invalid
from kubetrain.api.paddlejob import PaddleJob
from kubetrain.frameworks import elastic
from kubetrain.frameworks.base import Autoscaling, Framework, ReplicaBounds
from kubetrain.frameworks.checks import replica_count, replica_path
from kubetrain.frameworks.env import JobLayout, ReplicaCounts, env_var

# The variable Kubeflow points at the pod's own IP, for rank 0 to listen on (`$(POD_IP_DUMMY)`).
POD_IP_VARIABLE = "POD_IP_DUMMY"


class Paddle(Framework):
    kind = "PaddleJob"
    kubeflow_framework_name = "paddle"  # training-operator's GetFrameworkName()
    plural = "paddlejobs"
    singular = "paddlejob"
    short_names: tuple[str, ...] = ("pdj",)
    job_model: type[JobBase] = PaddleJob
    replica_field = "paddleReplicaSpecs"
    replica_types: tuple[str, ...] = ("Master", "Worker")
    master_types: tuple[str, ...] = ("Master",)
    container_name = "paddle"
    port_name = "master"
    default_port = 36543
    default_restart_policy = "OnFailure"
    operator_env_names = frozenset(
        {
            "PYTHONUNBUFFERED",
            "PADDLE_JOB_ID",
            "PADDLE_NNODES",
            POD_IP_VARIABLE,
            "PADDLE_MASTER",
            "PADDLE_SERVER_NUM",
            "PADDLE_TRAINER_NUM",
        }
    )

    # `kubectl scale` / an HPA resize the Workers (Kubeflow's CRD has the same scale subresource);
    # an elastic job's within its elasticPolicy.
    scalable_replica_type = "Worker"
    scale_hint = "elastic Workers can change within minReplicas..maxReplicas"
    bounds_name = "elasticPolicy minReplicas..maxReplicas"

    def default_spec(self, spec: dict[str, Any], counts: Mapping[Any, int | None]) -> list[str]:
        """Elastic minReplicas/maxReplicas from each other, else from the Worker count
        (Kubeflow's setPaddleElasticPolicy)."""
        policy = spec.get("elasticPolicy")
        if isinstance(policy, dict):
            spec["elasticPolicy"] = dict(policy)
            elastic.default_bounds(spec["elasticPolicy"], counts.get("Worker"))
        return []

    def replica_bounds(self, spec: Mapping[str, Any]) -> ReplicaBounds | None:
        return elastic.bounds(spec)

    def autoscaling(self, job: JobLayout) -> Autoscaling | None:
        return elastic.autoscaling(job.spec)

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """The rendezvous pod exists (Master 0, else Worker 0); elastic Workers within
        minReplicas..maxReplicas."""
        if not isinstance(job, PaddleJob):
            return []
        replicas = job.spec.paddle_replica_specs or {}
        errors: list[FieldError] = []
        master_path = replica_path(base_path, self.replica_field, "Master")
        worker_path = replica_path(base_path, self.replica_field, "Worker")
        if "Master" in replicas:
            if replica_count(replicas["Master"]) < 1:
                errors.append(
                    invalid(
                        f"{master_path}.replicas",
                        "must be at least 1: Master 0 is the rendezvous endpoint of a parameter-server "
                        "PaddleJob (remove Master for collective training)",
                    )
                )
        elif "Worker" in replicas and replica_count(replicas["Worker"]) < 1:
            errors.append(
                invalid(
                    f"{worker_path}.replicas",
                    "must be at least 1 in a collective PaddleJob (no Master): Worker 0 is its "
                    "rendezvous endpoint",
                )
            )
        if job.spec.elastic_policy is not None:
            errors.extend(self._validate_elastic(job, base_path))
        return errors

    def _validate_elastic(self, job: PaddleJob, base_path: str) -> list[FieldError]:
        policy = job.spec.elastic_policy
        assert policy is not None
        replicas = job.spec.paddle_replica_specs or {}
        return [
            *elastic.worker_bounds_errors(
                self.kind, base_path, self.replica_field, replicas, policy.min_replicas, policy.max_replicas
            ),
            *elastic.max_restarts_errors(base_path, policy.max_restarts),
        ]

    # --- engine (docs/behaviour.md §4-§5) ----------------------------------------------------------
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, Any]]:
        return paddle_cluster_env(job, replica_type, index)

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        return paddle_succeeded(job, counts)


def _has_master_spec(job: JobLayout) -> bool:
    """A Master in the spec makes the job parameter-server (Kubeflow: the key is present)."""
    return "Master" in job.replicas


def paddle_cluster_env(job: JobLayout, replica_type: str, index: int) -> list[dict[str, Any]]:
    """PYTHONUNBUFFERED, PADDLE_JOB_ID, PADDLE_NNODES, PADDLE_MASTER (and POD_IP_DUMMY on the
    rendezvous pod); parameter-server mode adds PADDLE_SERVER_NUM=1 (Masters) or
    PADDLE_TRAINER_NUM=1 (Workers) — in every container, as Kubeflow's setPodEnv.

    The rendezvous pod — Master 0, else Worker 0 — listens on its own IP: it gets POD_IP_DUMMY from
    `status.podIP` and `PADDLE_MASTER=$(POD_IP_DUMMY):<port>` (the kubelet expands the reference,
    which therefore comes first); every other pod gets the rendezvous pod's address.
    """
    rdzv = "Master" if _has_master_spec(job) else "Worker"
    port = job.port(rdzv) if rdzv in job.replicas else 0
    env: list[dict[str, Any]] = [
        env_var("PYTHONUNBUFFERED", "1"),
        env_var("PADDLE_JOB_ID", job.name),
        env_var("PADDLE_NNODES", job.total_replicas),
    ]
    if replica_type == rdzv and index == 0:
        env.append({"name": POD_IP_VARIABLE, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
        env.append(env_var("PADDLE_MASTER", f"$({POD_IP_VARIABLE}):{port}"))
    else:
        env.append(env_var("PADDLE_MASTER", f"{job.pod_host(rdzv, 0)}:{port}"))
    if rdzv == "Master":
        # Each pod runs one server (Master) or one trainer (Worker).
        env.append(env_var("PADDLE_SERVER_NUM" if replica_type == "Master" else "PADDLE_TRAINER_NUM", 1))
    return env


def paddle_succeeded(job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
    """Every Master succeeded (parameter-server); else every Worker (collective, elastic too)."""
    decider = "Master" if _has_master_spec(job) else "Worker"
    if not job.has(decider):
        return False
    c = counts.get(decider, ReplicaCounts())
    wanted = job.count(decider)
    return sum(1 for i in c.succeeded_indices if i < wanted) >= wanted


FRAMEWORK = Paddle()
