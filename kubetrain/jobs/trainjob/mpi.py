"""Trainer 2.3's MPI policy (pkg/runtime/framework/plugins/mpi) on a TrainJob's steps, with the
pieces kubetrain's MPIJob uses (an ssh-auth Secret whose key pair `PlanApplier` generates at
create time; a hostfile ConfigMap):

- the `node` step runs numNodes pods (numNodes - 1 with `runLauncherAsNode`, at least 1); the
  launcher is the replicated job named `launcher` (one pod);
- `node` and `launcher` pods mount the Secret `<tj>-mpi-ssh-auth` (id_rsa, id_rsa.pub,
  authorized_keys) at `sshAuthMountPath` in their `node` container; the launcher also mounts the
  ConfigMap `<tj>-mpi-hostfile` at /etc/mpi and gets OpenMPI's OMPI_MCA_* variables; with
  `runLauncherAsNode` the `node` pods' `node` container gets the TrainJob's env and
  resourcesPerNode as the launcher's does;
- the hostfile lists `<tj>-<step>-<j>-<i>.<subdomain> slots=<numProcPerNode>` for every pod of
  the `node` step (and of the launcher with runLauncherAsNode), in the runtime's step order.
Pure."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.api.errors import FieldError, not_supported
from kubetrain.api.trainer import constants as c
from kubetrain.frameworks.mlpolicies import gpus_per_node
from kubetrain.jobs.trainjob.model import Step
from kubetrain.jobs.trainjob.patches import counted_resources, merge_named, merge_resources, upsert_env

SSH_VOLUME = "mpi-ssh-auth"
HOSTFILE_VOLUME = "mpi-hostfile"
HOSTFILE = "hostfile"
DEFAULT_SSH_MOUNT = "/root/.ssh"


@dataclass(frozen=True)
class MPIPolicy:
    node_count: int
    slots: int
    implementation: str
    ssh_mount_path: str
    launcher_as_node: bool
    trainer_env: tuple[Mapping[str, Any], ...]
    resources_per_node: Mapping[str, Any] | None = None  # the TrainJob's


def policy(
    source: Mapping[str, Any],
    trainer: Mapping[str, Any],
    num_nodes: int,
    runtime_resources: Mapping[str, Any] | None = None,
) -> MPIPolicy:
    """The MPI policy with Trainer's defaults and the TrainJob's numNodes/numProcPerNode applied;
    `runtime_resources`: the runtime's `node` container resources (`patches.runtime_resources`),
    under the TrainJob's resourcesPerNode, where the GPUs per node are counted."""
    as_node = source.get("runLauncherAsNode") is True
    slots = trainer.get("numProcPerNode") or source.get("numProcPerNode") or 1
    if slots == 1 and trainer.get("numProcPerNode") is None:
        gpus = gpus_per_node(counted_resources(trainer, runtime_resources))
        slots = gpus if gpus > 1 else 1
    nodes = max(num_nodes, 1)
    return MPIPolicy(
        node_count=max(nodes - 1, 1) if as_node else nodes,
        slots=int(slots),
        implementation=str(source.get("mpiImplementation") or "OpenMPI"),
        ssh_mount_path=str(source.get("sshAuthMountPath") or DEFAULT_SSH_MOUNT),
        launcher_as_node=as_node,
        trainer_env=tuple(trainer.get("env") or ()),
        resources_per_node=trainer.get("resourcesPerNode"),
    )


def secret_name(tj: str) -> str:
    return f"{tj}{c.MPI_SSH_SECRET_SUFFIX}"


def hostfile_name(tj: str) -> str:
    return f"{tj}{c.MPI_HOSTFILE_SUFFIX}"


def _is_launcher(step: Step) -> bool:
    """The replicated job named `launcher`, as Trainer's MPI plug-in finds it (by name only: a
    runtime may label its `node` job as the trainer's)."""
    return step.name == c.LAUNCHER


def enforce(steps: Sequence[Step], mpi: MPIPolicy) -> list[FieldError]:
    """Volumes, mounts and env on the `node` and launcher pod templates (changed in place)."""
    if mpi.implementation != "OpenMPI":
        return [
            not_supported("runtime.spec.mlPolicy.mpi.mpiImplementation", mpi.implementation, ("OpenMPI",))
        ]
    for step in steps:
        launcher = _is_launcher(step)
        if step.name != c.NODE and not launcher:
            continue
        spec: dict[str, Any] = step.pod_template.setdefault("spec", {})  # type: ignore[attr-defined]
        volumes = [
            {
                "name": SSH_VOLUME,
                "secret": {
                    "secretName": "$(SECRET)",
                    "defaultMode": 0o400,
                    "items": [
                        {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                        {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                        {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
                    ],
                },
            }
        ]
        if launcher:
            volumes.append(
                {
                    "name": HOSTFILE_VOLUME,
                    "configMap": {
                        "name": "$(HOSTFILE)",
                        "items": [{"key": HOSTFILE, "path": HOSTFILE, "mode": 0o444}],
                    },
                }
            )
        spec["volumes"] = merge_named(spec.get("volumes") or [], volumes)
        for container in spec.get("containers") or []:
            if not isinstance(container, dict) or container.get("name") != c.NODE:
                continue
            mounts = [{"name": SSH_VOLUME, "mountPath": mpi.ssh_mount_path}]
            if launcher:
                mounts.append({"name": HOSTFILE_VOLUME, "mountPath": c.MPI_HOSTFILE_DIR})
                upsert_env(
                    container,
                    [
                        {"name": c.OMPI_HOSTFILE, "value": f"{c.MPI_HOSTFILE_DIR}/{HOSTFILE}"},
                        {"name": c.OMPI_KEEP_FQDN, "value": "true"},
                        {"name": c.OMPI_DEFAULT_SLOTS, "value": str(mpi.slots)},
                        {"name": c.OMPI_RSH_ARGS, "value": "-o ConnectionAttempts=10"},
                    ],
                )
            elif mpi.launcher_as_node:  # the node job as the trainer's (Trainer's builder and
                # newRuntimeInfo's isMPILauncherAsNode): the TrainJob's env and resourcesPerNode
                upsert_env(container, list(mpi.trainer_env))
                if mpi.resources_per_node is not None:
                    per_node = copy.deepcopy(dict(mpi.resources_per_node))
                    container["resources"] = merge_resources(container.get("resources"), per_node)
            container["volumeMounts"] = merge_named(container.get("volumeMounts") or [], mounts, key="name")
    return []


def name_volumes(steps: Sequence[Step], tj: str) -> None:
    """Put the TrainJob's Secret and ConfigMap names into the volumes `enforce` added."""
    for step in steps:
        for volume in (step.pod_template.get("spec") or {}).get("volumes") or []:
            if volume.get("name") == SSH_VOLUME and volume.get("secret", {}).get("secretName") == "$(SECRET)":
                volume["secret"]["secretName"] = secret_name(tj)
            if (
                volume.get("name") == HOSTFILE_VOLUME
                and volume.get("configMap", {}).get("name") == "$(HOSTFILE)"
            ):
                volume["configMap"]["name"] = hostfile_name(tj)


def children(tj: str, subdomain: str, steps: Sequence[Step], mpi: MPIPolicy) -> tuple[dict[str, Any], ...]:
    """The ssh-auth Secret (immutable, no data: its key pair is generated when it is created)
    and the hostfile ConfigMap."""
    name_volumes(steps, tj)
    lines = [
        f"{tj}-{step.name}-{j}-{i}.{subdomain} slots={mpi.slots}"
        for step in steps
        if step.name == c.NODE or (mpi.launcher_as_node and _is_launcher(step))
        for j in range(step.replicas)
        for i in range(step.pods)
    ]
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(tj)},
        "type": "kubernetes.io/ssh-auth",
        "immutable": True,  # as Trainer's: its key pair is never rewritten
    }
    hostfile = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": hostfile_name(tj)},
        "data": {HOSTFILE: "".join(f"{line}\n" for line in lines)},
    }
    return (secret, hostfile)
