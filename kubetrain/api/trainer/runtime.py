"""TrainingRuntime (namespaced) and ClusterTrainingRuntime: a blueprint for TrainJobs — the ML
policy (how many nodes, which framework's environment), the gang policy and a JobSet template
whose replicated jobs are the steps (initializers, launcher, node). Trainer 2.3's field names.
Pure."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kubetrain.api.common import KubeModel
from kubetrain.api.trainer.jobset import JobSetSpec

MPIImplementation = Literal["OpenMPI", "Intel", "MPICH"]
MPI_IMPLEMENTATIONS = ("OpenMPI", "Intel", "MPICH")


class EnvInjectionTarget(KubeModel):
    job_name: str | None = None
    container_names: list[str] | None = None


class EnvInjection(KubeModel):
    targets: list[EnvInjectionTarget] | None = None


class TorchMLPolicySource(KubeModel):
    env_injection: EnvInjection | None = None


class MPIMLPolicySource(KubeModel):
    num_proc_per_node: int | None = None
    mpi_implementation: MPIImplementation | None = None
    ssh_auth_mount_path: str | None = None
    run_launcher_as_node: bool | None = None


class FluxMLPolicySource(KubeModel):
    num_proc_per_node: int | None = None


class JAXMLPolicySource(KubeModel):
    pass


class XGBoostMLPolicySource(KubeModel):
    pass


class MLPolicy(KubeModel):
    num_nodes: int | None = None
    torch: TorchMLPolicySource | None = None
    mpi: MPIMLPolicySource | None = None
    flux: FluxMLPolicySource | None = None
    jax: JAXMLPolicySource | None = None
    xgboost: XGBoostMLPolicySource | None = None

    def sources(self) -> list[str]:
        """The policy sources set (Trainer allows at most one)."""
        return [
            name for name in ("torch", "mpi", "flux", "jax", "xgboost") if getattr(self, name) is not None
        ]


class CoschedulingPodGroupPolicySource(KubeModel):
    schedule_timeout_seconds: int | None = None


class VolcanoPodGroupPolicySource(KubeModel):
    # Volcano's NetworkTopologySpec, passed through.
    network_topology: dict[str, Any] | None = None


class PodGroupPolicy(KubeModel):
    coscheduling: CoschedulingPodGroupPolicySource | None = None
    volcano: VolcanoPodGroupPolicySource | None = None


class JobSetTemplateSpec(KubeModel):
    metadata: dict[str, Any] | None = None
    spec: JobSetSpec | None = None


class TrainingRuntimeSpec(KubeModel):
    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    template: JobSetTemplateSpec | None = None


class TrainingRuntime(KubeModel):
    api_version: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: TrainingRuntimeSpec | None = None


class ClusterTrainingRuntime(TrainingRuntime):
    pass
