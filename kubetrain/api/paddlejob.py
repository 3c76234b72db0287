"""PaddleJob: PaddlePaddle collective (Workers only) and parameter-server (Master + Workers) jobs."""

from __future__ import annotations

from typing import Any

from kubetrain.api.common import Int32, JobBase, JobSpecBase, KubeModel, ReplicaSpec


class PaddleElasticPolicy(KubeModel):
    """The bounds `kubectl scale` / an HPA may resize the Workers within (Kubeflow's
    PaddleElasticPolicy)."""

    min_replicas: Int32 | None = None
    max_replicas: Int32 | None = None
    # The limit of pod restarts in elastic mode (carried as Kubeflow carries it; no variable).
    max_restarts: Int32 | None = None
    # HPA MetricSpecs, passed through untouched.
    metrics: list[dict[str, Any]] | None = None


class PaddleJobSpec(JobSpecBase):
    elastic_policy: PaddleElasticPolicy | None = None
    paddle_replica_specs: dict[str, ReplicaSpec] | None = None

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.paddle_replica_specs


class PaddleJob(JobBase):
    spec: PaddleJobSpec
