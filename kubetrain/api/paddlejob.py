"""PaddleJob: PaddlePaddle collective (Workers only) and parameter-server (Master + Workers) jobs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kubetrain.api.common import Int32, JobBase, JobSpecBase, KubeModel, ReplicaSpec


class PaddleElasticPolicy(KubeModel):
    """The bounds `kubectl scale` / an HPA may resize the Workers within (Kubeflow's
    PaddleElasticPolicy)."""

    min_replicas: Int32 | None = Field(
        None, description="The fewest Workers; defaults to maxReplicas, or to the Worker replicas."
    )
    max_replicas: Int32 | None = Field(
        None, description="The most Workers; defaults to minReplicas, or to the Worker replicas."
    )
    # Carried as Kubeflow carries it; no variable.
    max_restarts: Int32 | None = Field(
        None, description="The limit of pod restarts in elastic mode, at least 0 (recorded only)."
    )
    # HPA MetricSpecs, passed through untouched.
    metrics: list[dict[str, Any]] | None = Field(
        None,
        description="autoscaling/v2 MetricSpecs of the HorizontalPodAutoscaler kubetrain creates "
        "to scale the Workers between minReplicas and maxReplicas.",
    )


class PaddleJobSpec(JobSpecBase):
    elastic_policy: PaddleElasticPolicy | None = Field(
        None, description="Makes the job elastic: the bounds the Workers may be scaled within."
    )
    paddle_replica_specs: dict[str, ReplicaSpec] | None = Field(
        None,
        description="The PaddleJob's pods by replica type (Master, Worker): "
        "each a count, a pod template and a restartPolicy.",
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.paddle_replica_specs


class PaddleJob(JobBase):
    spec: PaddleJobSpec = Field(
        description="The PaddleJob's desired state: its replica types and run policy."
    )
