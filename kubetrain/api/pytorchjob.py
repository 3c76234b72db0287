"""PyTorchJob: torch.distributed (Master + Workers) and elastic torchrun jobs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kubetrain.api.common import Int32, JobBase, JobSpecBase, KubeModel, ReplicaSpec


class RDZVConf(KubeModel):
    key: str | None = Field(None, description="The rendezvous option's name.")
    value: str | None = Field(None, description="Its value.")


class ElasticPolicy(KubeModel):
    """torchrun elastic settings; rendezvous fields become PET_* environment variables."""

    min_replicas: Int32 | None = Field(
        None,
        description="The fewest Workers the job runs with (torchrun's minimum nodes); defaults to "
        "maxReplicas, or to the Worker replicas.",
    )
    max_replicas: Int32 | None = Field(
        None,
        description="The most Workers the job scales to (`kubectl scale`, an HPA); defaults to "
        "minReplicas, or to the Worker replicas.",
    )
    rdzv_backend: str | None = Field(
        None, description="torchrun's rendezvous backend (PET_RDZV_BACKEND), e.g. c10d or etcd."
    )
    rdzv_host: str | None = Field(None, description="Host of the rendezvous endpoint; unset: Worker 0.")
    rdzv_port: Int32 | None = Field(
        None, description="Port of the rendezvous endpoint, 1-65535; unset: the job's port."
    )
    rdzv_id: str | None = Field(None, description="The rendezvous ID (PET_RDZV_ID).")
    rdzv_conf: list[RDZVConf] | None = Field(
        None, description="Further rendezvous options as key/value pairs (PET_RDZV_CONF)."
    )
    standalone: bool | None = Field(
        None, description="true runs torchrun with a local rendezvous (PET_STANDALONE)."
    )
    # Deprecated in favour of spec.nprocPerNode; defaulting moves it there with a warning.
    n_proc_per_node: Int32 | None = Field(
        default=None,
        alias="nProcPerNode",
        description="Deprecated: set spec.nprocPerNode. Moved there, as a string, on admission.",
    )
    max_restarts: Int32 | None = Field(
        None, description="How often torchrun restarts the worker group (PET_MAX_RESTARTS), at least 0."
    )
    # HPA MetricSpecs, passed through untouched.
    metrics: list[dict[str, Any]] | None = Field(
        None,
        description="autoscaling/v2 MetricSpecs of the HorizontalPodAutoscaler kubetrain creates "
        "to scale the Workers between minReplicas and maxReplicas.",
    )


class PyTorchJobSpec(JobSpecBase):
    elastic_policy: ElasticPolicy | None = Field(
        None, description="Makes the job elastic (torchrun): Worker bounds, rendezvous and autoscaling."
    )
    nproc_per_node: str | None = Field(
        default=None,
        alias="nprocPerNode",
        description="Processes per pod (PET_NPROC_PER_NODE): a positive integer as a string, or "
        "auto, cpu or gpu. Defaults to auto.",
    )
    pytorch_replica_specs: dict[str, ReplicaSpec] | None = Field(
        None,
        description="The PyTorchJob's pods by replica type (Master, Worker): "
        "each a count, a pod template and a restartPolicy.",
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.pytorch_replica_specs


class PyTorchJob(JobBase):
    spec: PyTorchJobSpec = Field(
        description="The PyTorchJob's desired state: its replica types and run policy."
    )
