"""MPIJob `kubeflow.org/v1`: Kubeflow training-operator v1's layout (pkg/apis/kubeflow.org/v1/
mpi_types.go), served beside mpi-operator's `kubeflow.org/v2beta1` (kubetrain.api.mpijob, the
storage version) and converted to and from it by the CRD conversion webhook
(kubetrain.frameworks.mpiconversion). Only the CRD schema of the v1 version is built from this model:
the webhooks and the controller see every MPIJob as v2beta1.

v1's own fields: `cleanPodPolicy` at spec level (deprecated there, `runPolicy.cleanPodPolicy`
wins) and `mainContainer`, the container the operator decorates (kubetrain, like mpi-operator
v2, decorates container 0 of each pod). It has none of v2beta1's `runLauncherAsWorker`,
`mpiImplementation`, `sshAuthMountPath` or `launcherCreationPolicy`.
"""

from __future__ import annotations

from pydantic import Field

from kubetrain.api.common import CleanPodPolicy, Int32, JobBase, JobSpecBase, ReplicaSpec

# On a v2beta1 MPIJob converted from v1: v1's fields it has no place for (JSON); on a v1 one
# converted from v2beta1: v2beta1's. kubetrain.frameworks.mpiconversion writes and reads them.
ANNOTATION_V1_FIELDS = "kubetrain.io/mpijob-v1-fields"
ANNOTATION_V2BETA1_FIELDS = "kubetrain.io/mpijob-v2beta1-fields"


class MPIJobV1Spec(JobSpecBase):
    slots_per_worker: Int32 | None = Field(
        None, description="MPI processes per Worker (the hostfile's slots), at least 1. Defaults to 1."
    )
    clean_pod_policy: CleanPodPolicy | None = Field(
        None,
        description="Deprecated: use runPolicy.cleanPodPolicy (All, Running or None), which wins "
        "when both are set.",
    )
    main_container: str | None = Field(
        None,
        description="The container that runs MPI; kubetrain accepts only the first container of "
        "every template.",
    )
    mpi_replica_specs: dict[str, ReplicaSpec] | None = Field(
        None,
        description="The MPIJob's pods by replica type (one Launcher, Workers): "
        "each a count, a pod template and a restartPolicy.",
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.mpi_replica_specs


class MPIJobV1(JobBase):
    spec: MPIJobV1Spec = Field(description="The MPIJob's desired state: its replica types and run policy.")
