"""MPI: MPIJob (Kubeflow mpi-operator v2beta1 semantics) — Launcher and Workers over SSH.

Everything here follows mpi-operator's `pkg/controller/mpi_job_controller.go` and
`pkg/apis/kubeflow/v2beta1` (defaults, validation); the Go function each rule comes from is
named in its docstring. Differences, all documented in docs/behaviour.md: the Launcher is a pod
the operator manages like any replica (mpi-operator wraps it in a batch Job), named
`<job>-launcher-0` with hostname `<job>-launcher`; its restarts follow the replica restartPolicy
and runPolicy.backoffLimit. What the pods get (SSH, the hostfile ConfigMap, the environment) is
in kubetrain.frameworks.mpipods.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.api.common import JobBase
from kubetrain.api.errors import QUOTE, FieldError, invalid, required
from kubetrain.api.groups import MPI_OPERATOR_MANAGER
from kubetrain.api.mpijob import MPIJob
from kubetrain.api.mpijob_v1 import ANNOTATION_V1_FIELDS, MPIJobV1
from kubetrain.frameworks.base import ExtraChild, Framework
from kubetrain.frameworks.checks import replica_path
from kubetrain.frameworks.env import JobLayout, ReplicaCounts
from kubetrain.frameworks.mpilabels import LAUNCHER, WORKER, mpijob_pod_labels
from kubetrain.frameworks.mpipods import (
    DEFAULT_IMPLEMENTATION,
    DEFAULT_LAUNCHER_CREATION,
    DEFAULT_SLOTS,
    DEFAULT_SSH_PATH,
    IMPLEMENTATION_ENV,
    NVIDIA_DISABLE_ENV,
    ROLE_ENV,
    SLOTS_ENV,
    config_map,
    mpi_pod_spec,
    settings,
    ssh_secret,
)

DEFAULT_CLEAN_POD_POLICY = "None"  # v2beta1 setDefaultsRunPolicy

V1_WARNING = (
    "kubeflow.org/v1 MPIJob: run as mpi-operator v2beta1 runs it (the stored version) — the "
    "Launcher reaches the Workers over SSH, not through kubectl exec: the key pair is generated "
    "into Secret <job>-ssh and mounted at sshAuthMountPath (/root/.ssh), each Worker's first "
    "container runs `/usr/sbin/sshd -De` unless it has a command, so the Worker image must "
    "provide sshd; kubectl-delivery and kubexec.sh are not used"
)


class MPI(Framework):
    kind = "MPIJob"
    kubeflow_framework_name = "mpi"  # training-operator's GetFrameworkName()
    kubedl_kind = True
    # KubeDL's v1alpha1 MPIJob layout (`LegacyV1Alpha1`), which its controller turns into
    # mpiReplicaSpecs (`LegacyMPIJobToV1MPIJob`); kubetrain reads mpiReplicaSpecs only.
    kubedl_refused_fields = (
        ("gpus", "integer"),
        ("gpusPerNode", "integer"),
        ("processingUnits", "integer"),
        ("processingUnitsPerNode", "integer"),
        ("processingResourceType", "string"),
        ("launcherOnMaster", "boolean"),
        ("replicas", "integer"),
        ("template", "object"),
    )
    kubedl_refused_why = (
        "KubeDL's v1alpha1 MPIJob layout is not supported by kubetrain: describe the pods in "
        "spec.mpiReplicaSpecs (Launcher and Worker, each with replicas and template) instead"
    )
    # KubeDL's v1alpha2 `mpiDistribution`.
    kubedl_renamed_field = (
        "mpiDistribution",
        "mpiImplementation",
        (("OpenMPI", "OpenMPI"), ("IntelMPI", "Intel"), ("MPICH", "MPICH")),
    )
    kubedl_controller_name = "MPIController"  # KubeDL's controllerName
    kubedl_dag = (("Launcher", "Worker"),)  # setDefaultMPIDAGConditions
    plural = "mpijobs"
    singular = "mpijob"
    short_names: tuple[str, ...] = ("mpij",)
    job_model: type[JobBase] = MPIJob
    replica_field = "mpiReplicaSpecs"
    replica_types: tuple[str, ...] = (LAUNCHER, WORKER)
    master_types: tuple[str, ...] = (LAUNCHER,)
    display_name = "MPI"
    container_name = ""  # mpi-operator decorates containers[0], whatever its name
    port_name = ""  # MPI declares no port: mpirun reaches workers' sshd
    default_port = 22
    kubeflow_version = "v2beta1"  # mpi-operator's, the storage version of mpijobs.kubeflow.org
    kubeflow_converted_versions: tuple[str, ...] = ("v1",)  # training-operator's (mpiconversion.py)
    # mpi-operator v2 records no per-pod Events on the MPIJob (training-operator v1.9 its pod
    # creates: kubetrain.operator.podevents)
    kubeflow_pod_events = False
    kubeflow_managers: tuple[str, ...] = (MPI_OPERATOR_MANAGER,)  # managedByExternalController
    default_restart_policy = "Never"  # DefaultRestartPolicy
    default_replicas: Mapping[str, int] = {LAUNCHER: 1, WORKER: 0}
    default_restart_policies: Mapping[str, str] = {LAUNCHER: "OnFailure"}  # DefaultLauncherRestartPolicy
    operator_env_names = frozenset(
        {ROLE_ENV, *NVIDIA_DISABLE_ENV, *SLOTS_ENV.values()}
        | {name for env in IMPLEMENTATION_ENV.values() for name, _ in env}
    )

    def converted_model(self, version: str) -> type[JobBase] | None:
        return MPIJobV1 if version == "v1" else None

    def conversion_warning(self, version: str) -> str | None:
        return V1_WARNING if version == "v1" else None

    def kubeflow_pod_labels(self, job: JobLayout, replica_type: str, index: int) -> dict[str, str]:
        """The labels of the operator whose version the job was created at (frameworks/mpilabels.py):
        training-operator v1.9's for `kubeflow.org/v1` (the Launcher job-role `master`, as the
        Kubeflow v1 SDK selects it), else mpi-operator's (job-role `launcher`/`worker`, as its
        README selects the launcher; replica-index + 1 with runLauncherAsWorker)."""
        return mpijob_pod_labels(
            job.name,
            job.annotations,
            replica_type,
            index,
            launcher_as_worker=settings(job).launcher_as_worker,
        )

    # --- defaulting and validation (v2beta1 SetDefaults_MPIJob, validateMPIJobSpec) ------------------
    def default_spec(self, spec: dict[str, Any], counts: Mapping[Any, int | None]) -> list[str]:
        """slotsPerWorker 1, sshAuthMountPath /root/.ssh, mpiImplementation OpenMPI,
        launcherCreationPolicy AtStartup, runPolicy.cleanPodPolicy None (SetDefaults_MPIJob)."""
        for name, value in (
            ("slotsPerWorker", DEFAULT_SLOTS),
            ("sshAuthMountPath", DEFAULT_SSH_PATH),
            ("mpiImplementation", DEFAULT_IMPLEMENTATION),
            ("launcherCreationPolicy", DEFAULT_LAUNCHER_CREATION),
        ):
            if spec.get(name) is None or spec.get(name) == "":
                spec[name] = value
        run_policy = spec.get("runPolicy")
        if run_policy is None:
            run_policy = {}
        if isinstance(run_policy, dict) and run_policy.get("cleanPodPolicy") is None:
            spec["runPolicy"] = {**run_policy, "cleanPodPolicy": DEFAULT_CLEAN_POD_POLICY}
        return []

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """Launcher required with exactly 1 replica (validateLauncherReplicaSpec); slotsPerWorker
        ≥ 1; sshAuthMountPath an absolute path. Enums are checked by the model."""
        if not isinstance(job, MPIJob):
            return []
        spec = job.spec
        replicas = spec.mpi_replica_specs or {}
        errors: list[FieldError] = []
        launcher_path = replica_path(base_path, self.replica_field, LAUNCHER)
        launcher = replicas.get(LAUNCHER)
        if launcher is None:
            errors.append(required(launcher_path, "an MPIJob needs exactly one Launcher (it runs mpirun)"))
        elif launcher.replicas is not None and launcher.replicas != 1:
            errors.append(invalid(f"{launcher_path}.replicas", f"must be 1, got {launcher.replicas}"))
        slots = spec.slots_per_worker
        if slots is not None and slots < 1:
            errors.append(invalid(f"{base_path}.slotsPerWorker", f"must be at least 1, got {slots}"))
        errors += main_container_errors(job, base_path)
        path = spec.ssh_auth_mount_path
        if path is not None and (not path.startswith("/") or posixpath.normpath(path) == "/"):
            errors.append(
                invalid(
                    f"{base_path}.sshAuthMountPath",
                    f"must be an absolute directory other than / (like {DEFAULT_SSH_PATH}), got "
                    f"{QUOTE.encode(path)}",
                )
            )
        return errors

    # --- the engine ----------------------------------------------------------------------------------
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
        return []  # the MPI variables go into container 0 only: customize_pod

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        """The job succeeds with its Launcher (updateMPIJobStatus: launcher Job complete)."""
        launcher = counts.get(LAUNCHER)
        return launcher is not None and 0 in launcher.succeeded_indices

    def spec_gates(self, spec: Mapping[str, Any]) -> Mapping[str, tuple[str, ...]]:
        """WaitForWorkersReady: the Launcher is created once every Worker is Ready (syncHandler:
        `countReadyWorkerPods(worker) == len(worker)`). Under gang scheduling the PodGroup then
        counts the Workers only (`Framework.gang_excluded_types`)."""
        if spec.get("launcherCreationPolicy") == "WaitForWorkersReady":  # as Settings reads it
            return {LAUNCHER: (WORKER,)}
        return {}

    def customize_pod(self, job: JobLayout, replica_type: str, index: int, spec: dict[str, Any]) -> None:
        mpi_pod_spec(job, replica_type, spec)

    def extra_children(self, job: JobLayout, pods: Sequence[Mapping[str, Any]]) -> list[ExtraChild]:
        """The SSH Secret (create-only: the operator never reads Secrets), then the ConfigMap."""
        return [ExtraChild(ssh_secret(job), observed=False), ExtraChild(config_map(job, pods), observed=True)]


def main_container_errors(job: MPIJob, base_path: str) -> list[FieldError]:
    """A kubeflow.org/v1 MPIJob's `mainContainer` (kept by the conversion in an annotation) must
    name the first container of the Launcher and Worker templates: kubetrain, like mpi-operator
    v2, runs mpirun and sshd in container 0 and gives it the MPI environment."""
    raw = (job.metadata.get("annotations") or {}).get(ANNOTATION_V1_FIELDS)
    try:
        record = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return []
    main = record.get("mainContainer") if isinstance(record, dict) else None
    if not isinstance(main, str) or not main:
        return []
    firsts: dict[str, Any] = {}
    for rtype, replica in (job.spec.mpi_replica_specs or {}).items():
        spec = replica.template.get("spec")
        containers = spec.get("containers") if isinstance(spec, dict) else None
        if isinstance(containers, list) and containers and isinstance(containers[0], dict):
            firsts[rtype] = containers[0].get("name")
    wrong = {rtype: name for rtype, name in firsts.items() if name != main}
    if not wrong:
        return []
    listed = ", ".join(f"{rtype} starts with {QUOTE.encode(name)}" for rtype, name in sorted(wrong.items()))
    return [
        invalid(
            f"{base_path}.mainContainer",
            f"kubetrain runs mpirun and sshd in the first container of each pod (as mpi-operator v2), "
            f"so {QUOTE.encode(main)} must be the first container of every replica template ({listed}): "
            "reorder the containers",
        )
    ]


FRAMEWORK = MPI()
