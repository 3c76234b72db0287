"""MPIJob: MPI jobs (Horovod, DeepSpeed, mpirun) with Kubeflow mpi-operator `v2beta1` field names.

A Launcher (exactly one pod, running `mpirun`) reaches the Workers (running `sshd`) over SSH
through the job's headless Service; the operator writes the hostfile into a ConfigMap and the SSH
key pair into a Secret (docs/behaviour.md §4).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kubetrain.api.common import Int32, JobBase, JobSpecBase, ReplicaSpec

MPIImplementation = Literal["OpenMPI", "Intel", "MPICH"]
LauncherCreationPolicy = Literal["AtStartup", "WaitForWorkersReady"]
MPI_IMPLEMENTATIONS: tuple[str, ...] = ("OpenMPI", "Intel", "MPICH")
LAUNCHER_CREATION_POLICIES: tuple[str, ...] = ("AtStartup", "WaitForWorkersReady")


class MPIJobSpec(JobSpecBase):
    slots_per_worker: Int32 | None = Field(
        None, description="MPI processes per Worker (the hostfile's slots), at least 1. Defaults to 1."
    )
    run_launcher_as_worker: bool | None = Field(
        None,
        description="true puts the Launcher in the hostfile too, so it runs MPI processes like a "
        "Worker. Defaults to false.",
    )
    mpi_implementation: MPIImplementation | None = Field(
        None,
        description="Which MPI the image runs, choosing the hostfile format and environment: "
        "OpenMPI (the default), Intel or MPICH.",
    )
    ssh_auth_mount_path: str | None = Field(
        None,
        description="Directory the job's SSH keys are mounted at in every pod, absolute and not "
        "/. Defaults to /root/.ssh.",
    )
    launcher_creation_policy: LauncherCreationPolicy | None = Field(
        None,
        description="When the Launcher is created: AtStartup (the default, with the Workers) or "
        "WaitForWorkersReady (once every Worker is ready).",
    )
    mpi_replica_specs: dict[str, ReplicaSpec] | None = Field(
        None,
        description="The MPIJob's pods by replica type (one Launcher, Workers): "
        "each a count, a pod template and a restartPolicy.",
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.mpi_replica_specs


class MPIJob(JobBase):
    spec: MPIJobSpec = Field(description="The MPIJob's desired state: its replica types and run policy.")
