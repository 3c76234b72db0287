"""Kubeflow Trainer v2's ML policies as plug-ins: what each `mlPolicy` source of a runtime adds to
the trainer's `node` container — torch (PET_* for torchrun), JAX (JAX_*), XGBoost (DMLC_*) — as
Trainer 2.3's plugins (pkg/runtime/framework/plugins) set it. MPI (hostfile, SSH keys, launcher)
is not one of them yet. Pure: the caller passes what the plug-in reads (`TrainerFacts`) and gets
the env to upsert into the container and the port to add.

The variables a plug-in sets are reserved: a TrainJob setting one in `spec.trainer.env` is refused
(`reserved_env`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.quantity import parse_quantity
from kubetrain.api.trainer import constants as c

EnvVar = dict[str, Any]


@dataclass(frozen=True)
class TrainerFacts:
    """What the ML policy plug-ins read about one TrainJob."""

    name: str  # the TrainJob's name (also its headless Service's)
    num_nodes: int  # pods of the trainer step
    num_proc_per_node: int | None  # spec.trainer.numProcPerNode
    resources: Mapping[str, Any]  # the node container's ResourceRequirements (resourcesPerNode merged)
    torchtune: bool = False  # torch: a torchtune TrainJob (`jobs/trainjob/torchtune.py`)
    subdomain: str = ""  # the pods' subdomain: the runtime's `network.subdomain` ("": the TrainJob's name)

    @property
    def master_host(self) -> str:
        """`<tj>-node-0-0.<subdomain>`: pod 0 of the node step under the headless Service of
        its subdomain — JobSet's `GetSubdomain`, the runtime's `network.subdomain`, else the
        TrainJob's name. (Trainer's torch, JAX and XGBoost plug-ins write `<tj>` whatever the
        subdomain, which under a runtime that sets one names no Service; its MPI hostfile,
        `syncPodNetwork`, uses the subdomain, as kubetrain does for all.)"""
        return f"{self.name}-{c.NODE}-0-0.{self.subdomain or self.name}"


def completion_index_env(name: str) -> EnvVar:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": c.COMPLETION_INDEX_FIELD_PATH}}}


def _value(value: object) -> int:
    """Quantity.Value(): rounded up to an integer."""
    try:
        return math.ceil(parse_quantity(value))
    except (ValueError, TypeError):
        return 0


def gpus_per_node(resources: Mapping[str, Any]) -> int:
    """Trainer's GetNumGPUPerNode: the first resource whose name contains "gpu", requests before limits."""

    def count(resource_list: object) -> int:
        if isinstance(resource_list, Mapping):
            for name, quantity in resource_list.items():
                if "gpu" in str(name).lower():
                    return _value(quantity)
        return 0

    return count(resources.get("requests")) or count(resources.get("limits"))


def cpus_per_node(resources: Mapping[str, Any]) -> int:
    """Trainer's getNumCPUPerNode: the cpu request, else the cpu limit, rounded up (0 when neither)."""
    request = (resources.get("requests") or {}).get("cpu")
    if request is not None and _value(request) != 0:
        return _value(request)
    limit = (resources.get("limits") or {}).get("cpu")
    return _value(limit) if limit is not None else 0


class MLPolicyPlugin:
    name: str  # the mlPolicy field: "torch"
    reserved_env: frozenset[str] = frozenset()

    def trainer_env(self, facts: TrainerFacts) -> list[EnvVar]:
        """The variables upserted into the trainer step's `node` container, in order."""
        raise NotImplementedError

    def port(self) -> int | None:
        """The containerPort added to the `node` container (None: none)."""
        return c.TORCH_PORT


class Torch(MLPolicyPlugin):
    name = "torch"
    reserved_env = c.TORCH_RESERVED_ENV

    def nproc_per_node(self, facts: TrainerFacts) -> str:
        """numProcPerNode; else `auto` — which, with no GPU asked for, is the node's CPU count (≥ 1)."""
        if facts.num_proc_per_node is not None:
            return str(facts.num_proc_per_node)
        if gpus_per_node(facts.resources) == 0:
            return str(max(1, cpus_per_node(facts.resources)))
        return "auto"

    def trainer_env(self, facts: TrainerFacts) -> list[EnvVar]:
        """PET_*; the master address and port too unless torchtune, whose rendezvous endpoint is
        on its command line."""
        if facts.torchtune:
            return self.pet_env(facts)
        return [*self.pet_env(facts), *self.master_env(facts)]

    def pet_env(self, facts: TrainerFacts) -> list[EnvVar]:
        return [
            {"name": c.PET_NNODES, "value": str(facts.num_nodes)},
            {"name": c.PET_NPROC_PER_NODE, "value": self.nproc_per_node(facts)},
            completion_index_env(c.PET_NODE_RANK),
        ]

    def master_env(self, facts: TrainerFacts) -> list[EnvVar]:
        return [
            {"name": c.PET_MASTER_ADDR, "value": facts.master_host},
            {"name": c.PET_MASTER_PORT, "value": str(c.TORCH_PORT)},
        ]


class Jax(MLPolicyPlugin):
    name = "jax"
    reserved_env = frozenset({"JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_COORDINATOR_ADDRESS"})

    def trainer_env(self, facts: TrainerFacts) -> list[EnvVar]:
        return [
            {"name": "JAX_NUM_PROCESSES", "value": str(facts.num_nodes)},
            completion_index_env("JAX_PROCESS_ID"),
            {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{facts.master_host}:{c.TORCH_PORT}"},
        ]


class XGBoost(MLPolicyPlugin):
    name = "xgboost"
    reserved_env = c.XGBOOST_RESERVED_ENV

    def trainer_env(self, facts: TrainerFacts) -> list[EnvVar]:
        workers = facts.num_nodes * max(1, gpus_per_node(facts.resources))
        return [
            {"name": c.DMLC_TRACKER_URI, "value": facts.master_host},
            {"name": c.DMLC_TRACKER_PORT, "value": str(c.TORCH_PORT)},
            completion_index_env(c.DMLC_TASK_ID),
            {"name": c.DMLC_NUM_WORKER, "value": str(workers)},
        ]


PLUGINS: dict[str, MLPolicyPlugin] = {p.name: p for p in (Torch(), Jax(), XGBoost())}
# Every env name some plug-in sets, plus the OMPI_* ones the MPI policy sets: refused in a
# TrainJob's trainer env whatever its runtime (Trainer refuses them per policy).
RESERVED_ENV: frozenset[str] = frozenset().union(
    *(p.reserved_env for p in PLUGINS.values()), c.MPI_RESERVED_ENV
)


def plugin_for(ml_policy: Mapping[str, Any] | None) -> MLPolicyPlugin | None:
    """The plug-in of the runtime's ML policy source (None: plain, e.g. DeepSpeed/MPI not run yet)."""
    for name, plugin in PLUGINS.items():
        if ml_policy and ml_policy.get(name) is not None:
            return plugin
    return None
