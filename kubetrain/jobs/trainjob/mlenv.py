"""A TrainJob's env plug-in (`JobShape.plugin`): the env its runtime's ML policy gives the pods
(torch `PET_*` and the master address, JAX `JAX_*`, XGBoost `DMLC_*`; `frameworks/mlpolicies.py`)
and the policy's port, added to each new pod as the v1 kinds' frameworks add theirs — not written
into the resolved templates.

Trainer's ML policy plug-ins set these variables on the JobSet's containers: a variable of the
same name the template (or the TrainJob's trainer env) sets is replaced in place, new ones are
appended, in the order the policy gives them; the trainer's `node` container also gets the
policy's port unless it lists that port already. `torch.envInjection` gives the `PET_*` and
master variables to named containers (or init containers) of the replicated jobs too. MPI's
additions are the MPI policy's own (`mpi.py`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.frameworks.base import Autoscaling, ExtraChild
from kubetrain.frameworks.env import JobLayout
from kubetrain.jobs.trainjob.patches import upsert_env


@dataclass(frozen=True, slots=True)
class ContainerEnv:
    """Env (and a port) for one container of every pod of one replicated job."""

    step: str
    container: str
    env: tuple[Mapping[str, Any], ...]
    port: int | None = None


@dataclass(frozen=True)
class MLPolicyEnv:
    """The EnvPlugin of a TrainJob: its ML policy's env, container by container."""

    additions: tuple[ContainerEnv, ...] = ()

    @property
    def master_types(self) -> tuple[str, ...]:
        return ()

    @property
    def cluster_env_framework_container_only(self) -> bool:
        return True

    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, Any]]:
        return []

    def customize_pod(self, job: JobLayout, replica_type: str, index: int, spec: dict[str, Any]) -> None:
        # a container of the name, else an init container (Trainer's FindContainerByPodSetName)
        containers = [
            c
            for field in ("containers", "initContainers")
            for c in spec.get(field) or []
            if isinstance(c, dict)
        ]
        for addition in self.additions:
            if addition.step != replica_type:
                continue
            container = next((c for c in containers if c.get("name") == addition.container), None)
            if container is None:
                continue
            upsert_env(container, addition.env)
            if addition.port is not None:
                ports = list(container.get("ports") or [])
                if not any(isinstance(p, Mapping) and p.get("containerPort") == addition.port for p in ports):
                    ports.append({"containerPort": addition.port})
                container["ports"] = ports

    def extra_children(self, job: JobLayout, pods: Sequence[Mapping[str, Any]]) -> list[ExtraChild]:
        return []

    def autoscaling(self, job: JobLayout) -> Autoscaling | None:
        return None
