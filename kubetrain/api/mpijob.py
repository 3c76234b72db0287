"""MPIJob: MPI jobs (Horovod, DeepSpeed, mpirun) with Kubeflow mpi-operator `v2beta1` field names.

A Launcher (exactly one pod, running `mpirun`) reaches the Workers (running `sshd`) over SSH
through the job's headless Service; the operator writes the hostfile into a ConfigMap and the SSH
key pair into a Secret (docs/behaviour.md §4).
"""

from __future__ import annotations

from typing import Literal

from kubetrain.api.common import Int32, JobBase, JobSpecBase, ReplicaSpec

MPIImplementation = Literal["OpenMPI", "Intel", "MPICH"]
LauncherCreationPolicy = Literal["AtStartup", "WaitForWorkersReady"]
MPI_IMPLEMENTATIONS: tuple[str, ...] = ("OpenMPI", "Intel", "MPICH")
LAUNCHER_CREATION_POLICIES: tuple[str, ...] = ("AtStartup", "WaitForWorkersReady")


class MPIJobSpec(JobSpecBase):
    slots_per_worker: Int32 | None = None
    run_launcher_as_worker: bool | None = None
    mpi_implementation: MPIImplementation | None = None
    ssh_auth_mount_path: str | None = None
    launcher_creation_policy: LauncherCreationPolicy | None = None
    mpi_replica_specs: dict[str, ReplicaSpec] | None = None

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.mpi_replica_specs


class MPIJob(JobBase):
    spec: MPIJobSpec
