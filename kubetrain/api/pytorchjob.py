"""PyTorchJob: torch.distributed (Master + Workers) and elastic torchrun jobs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kubetrain.api.common import Int32, JobBase, JobSpecBase, KubeModel, ReplicaSpec


class RDZVConf(KubeModel):
    key: str | None = None
    value: str | None = None


class ElasticPolicy(KubeModel):
    """torchrun elastic settings; rendezvous fields become PET_* environment variables."""

    min_replicas: Int32 | None = None
    max_replicas: Int32 | None = None
    rdzv_backend: str | None = None
    rdzv_host: str | None = None
    rdzv_port: Int32 | None = None
    rdzv_id: str | None = None
    rdzv_conf: list[RDZVConf] | None = None
    standalone: bool | None = None
    # Deprecated in favour of spec.nprocPerNode; defaulting moves it there with a warning.
    n_proc_per_node: Int32 | None = Field(default=None, alias="nProcPerNode")
    max_restarts: Int32 | None = None
    # HPA MetricSpecs, passed through untouched.
    metrics: list[dict[str, Any]] | None = None


class PyTorchJobSpec(JobSpecBase):
    elastic_policy: ElasticPolicy | None = None
    # An integer as a string, or "auto", "cpu", "gpu".
    nproc_per_node: str | None = Field(default=None, alias="nprocPerNode")
    pytorch_replica_specs: dict[str, ReplicaSpec] | None = None

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.pytorch_replica_specs


class PyTorchJob(JobBase):
    spec: PyTorchJobSpec
