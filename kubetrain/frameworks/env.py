"""The engine's view of a job, shared by every framework: replica layout, pod addresses, counts.

A `JobLayout` is built once per job generation by its shape's producer (the `<kind>ReplicaSpecs`
kinds: `kubetrain.jobs.v1shape.lay_out`, from the defaulted job's replica drafts; a TrainJob:
`kubetrain.jobs.trainjob.shape`) and is what the frameworks' `cluster_env` and `succeeded`
read. It never changes after it is built, so the planner caches it per (uid, generation).

Addresses follow docs/behaviour.md §4: pod `<job>-<lower(type)>-<index>` resolves through the job's
headless Service at `<pod>.<job>.<ns>.svc`; a replica type's port is the framework container's
port named after the framework (`tfjob-port`, …), else the framework's default port.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.clusterdomain import UNSET, ClusterDomain


@dataclass(frozen=True, slots=True)
class ReplicaLayout:
    """One replica type of a job: how many pods, from which template, on which port."""

    type: str  # canonical spelling: "Worker"
    replicas: int
    template: Mapping[str, Any]  # the PodTemplateSpec dict (never mutated)
    restart_policy: str  # Always | OnFailure | Never | ExitCode
    port: int  # the framework container's port for this type
    container_index: int  # which container of the template is the framework container

    @property
    def lower(self) -> str:
        return self.type.lower()


@dataclass(frozen=True, slots=True)
class JobLayout:
    """Everything about a job the engine needs, in replica priority order."""

    kind: str
    api_version: str
    name: str
    namespace: str
    uid: str
    spec: Mapping[str, Any]  # the defaulted spec (read-only)
    replicas: Mapping[str, ReplicaLayout]  # canonical type -> layout, in the framework's order
    port_name: str = ""
    # Host network mode (frameworks/hostnetwork.py): every pod's own port, by (type, index).
    host_ports: Mapping[tuple[str, int], int] = field(default_factory=dict)

    @property
    def host_network(self) -> bool:
        return bool(self.host_ports)

    # How a pod is addressed: under the job's headless Service (the default), or by its own
    # Service in `per-pod` service mode (kubetrain.api.servicemode; the framework's form).
    host_format: str = "{pod}.{job}.{namespace}.svc"
    per_pod_services: bool = False  # one Service per pod instead of the job's headless one
    # The job's metadata.annotations (KubeDL's job features read theirs: kubetrain.jobs.kubedl).
    annotations: Mapping[str, Any] = field(default_factory=dict)
    # Its API resource (`pytorchjobs`): the progress endpoint's route and token audience name it.
    resource: str = ""
    # The ConfigMap that carries the progress endpoint's CA to its pods (operator/progressenv.py).
    progress_ca_config_map: str = ""
    # The operator's cluster domain (api/clusterdomain.py): the names that carry one use it.
    cluster_domain: ClusterDomain = UNSET

    @property
    def total_replicas(self) -> int:
        return sum(r.replicas for r in self.replicas.values())

    def count(self, replica_type: str) -> int:
        r = self.replicas.get(replica_type)
        return r.replicas if r is not None else 0

    def has(self, replica_type: str) -> bool:
        """True when the type is in the spec with at least one replica."""
        return self.count(replica_type) > 0

    def pod_name(self, replica_type: str, index: int) -> str:
        return pod_name(self.name, replica_type, index)

    def pod_host(self, replica_type: str, index: int) -> str:
        """`<pod>.<job>.<ns>.svc`: resolvable through the headless Service before readiness
        (per-pod service mode: the pod's own Service, e.g. the bare `<pod>`)."""
        pod = self.pod_name(replica_type, index)
        return self.host_format.format(pod=pod, job=self.name, namespace=self.namespace)

    def pod_address(self, replica_type: str, index: int) -> str:
        """`<pod_host>:<port>`."""
        return f"{self.pod_host(replica_type, index)}:{self.pod_port(replica_type, index)}"

    def pod_port(self, replica_type: str, index: int) -> int:
        """The framework port of one pod: its own host port in host network mode."""
        return self.host_ports.get((replica_type, index), self.replicas[replica_type].port)

    def port(self, replica_type: str) -> int:
        """The type's port (pod 0's in host network mode: the one a leader listens on)."""
        return self.pod_port(replica_type, 0)

    @property
    def is_standalone(self) -> bool:
        """One replica in total: such a job gets no cluster variables (docs/behaviour.md §4)."""
        return self.total_replicas == 1


@dataclass(frozen=True, slots=True)
class ReplicaCounts:
    """Pod counts of one replica type as observed now (terminating pods excluded)."""

    active: int = 0  # phase Running
    pending: int = 0  # phase Pending (or no phase yet)
    succeeded: int = 0
    failed: int = 0
    succeeded_indices: frozenset[int] = field(default_factory=frozenset)


def pod_name(job_name: str, replica_type: str, index: int) -> str:
    return f"{job_name}-{replica_type.lower()}-{index}"


def env_var(name: str, value: str | int) -> dict[str, str]:
    return {"name": name, "value": str(value)}


def container_port(container: Mapping[str, Any] | None, port_name: str, default: int) -> int:
    """The port named `port_name` on the container, else `default`."""
    if not container:
        return default
    for p in container.get("ports") or []:
        if isinstance(p, Mapping) and p.get("name") == port_name:
            value = p.get("containerPort")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return default
