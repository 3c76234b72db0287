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
    job_name: str | None = Field(
        None, description="The replicated job whose containers get the variables, e.g. node."
    )
    container_names: list[str] | None = Field(None, description="The containers of that job that get them.")


class EnvInjection(KubeModel):
    targets: list[EnvInjectionTarget] | None = Field(
        None, description="Further containers that get the PET_* variables, by replicated job."
    )


class TorchMLPolicySource(KubeModel):
    env_injection: EnvInjection | None = Field(
        None,
        description="Which containers besides the node container get torchrun's PET_* variables; "
        "unset: the node container only.",
    )


PROC_PER_NODE = "Processes on each node (the hostfile's slots), at least 1. Defaults to 1."


class MPIMLPolicySource(KubeModel):
    num_proc_per_node: int | None = Field(None, description=PROC_PER_NODE)
    mpi_implementation: MPIImplementation | None = Field(
        None, description="The MPI the image runs: OpenMPI (the default; the only one kubetrain runs)."
    )
    ssh_auth_mount_path: str | None = Field(
        None, description="Directory the SSH keys are mounted at. Defaults to /root/.ssh."
    )
    run_launcher_as_node: bool | None = Field(
        None, description="true: the launcher runs training processes too, as a node. Defaults to false."
    )


class FluxMLPolicySource(KubeModel):
    num_proc_per_node: int | None = Field(
        None, description="Processes on each node, at least 1. Defaults to 1."
    )


class JAXMLPolicySource(KubeModel):
    pass


class XGBoostMLPolicySource(KubeModel):
    pass


class MLPolicy(KubeModel):
    num_nodes: int | None = Field(
        None,
        description="Training nodes (pods) a TrainJob runs unless it sets trainer.numNodes. Defaults to 1.",
    )
    torch: TorchMLPolicySource | None = Field(
        None, description="A PyTorch runtime: torchrun's environment. At most one framework is set."
    )
    mpi: MPIMLPolicySource | None = Field(
        None, description="An MPI runtime: a launcher running mpirun over SSH. At most one framework is set."
    )
    flux: FluxMLPolicySource | None = Field(
        None, description="A Flux HPC runtime. At most one framework is set."
    )
    jax: JAXMLPolicySource | None = Field(
        None,
        description="A JAX runtime (jax.distributed's environment); no settings. At most one "
        "framework is set.",
    )
    xgboost: XGBoostMLPolicySource | None = Field(
        None,
        description="An XGBoost runtime (its tracker environment); no settings. At most one "
        "framework is set.",
    )

    def sources(self) -> list[str]:
        """The policy sources set (Trainer allows at most one)."""
        return [
            name for name in ("torch", "mpi", "flux", "jax", "xgboost") if getattr(self, name) is not None
        ]


class CoschedulingPodGroupPolicySource(KubeModel):
    schedule_timeout_seconds: int | None = Field(
        None, description="Seconds the scheduler tries to place the whole gang. Defaults to 60."
    )


class VolcanoPodGroupPolicySource(KubeModel):
    network_topology: dict[str, Any] | None = Field(
        None, description="Volcano's NetworkTopologySpec for the PodGroup, passed to Volcano as written."
    )


class PodGroupPolicy(KubeModel):
    coscheduling: CoschedulingPodGroupPolicySource | None = Field(
        None, description="Gang-schedule with scheduler-plugins' coscheduling. At most one of the two."
    )
    volcano: VolcanoPodGroupPolicySource | None = Field(
        None, description="Gang-schedule with Volcano. At most one of the two."
    )


class JobSetTemplateSpec(KubeModel):
    metadata: dict[str, Any] | None = Field(
        None, description="Labels and annotations for the TrainJob's JobSet (named as the TrainJob)."
    )
    spec: JobSetSpec | None = Field(
        None, description="The JobSet spec: the steps (replicated jobs) and their failure and success rules."
    )


class TrainingRuntimeSpec(KubeModel):
    ml_policy: MLPolicy | None = Field(
        None, description="Node count and the framework whose distributed environment the nodes get."
    )
    pod_group_policy: PodGroupPolicy | None = Field(
        None, description="Gang scheduling: all of a TrainJob's pods are placed together or not at all."
    )
    template: JobSetTemplateSpec | None = Field(
        None,
        description="The JobSet every TrainJob of this runtime becomes, before the TrainJob's overrides.",
    )


class TrainingRuntime(KubeModel):
    api_version: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: TrainingRuntimeSpec | None = Field(
        None, description="The blueprint: ML policy, gang policy and JobSet template."
    )


class ClusterTrainingRuntime(TrainingRuntime):
    pass
