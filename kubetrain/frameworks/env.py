"""The engine's view of a job, shared by every framework: replica layout, pod addresses, counts.

A `JobLayout` is built once per job generation from the (defaulted) wire dict and is what the
frameworks' `cluster_env` and `succeeded` read. It never changes after it is built, so the
planner caches it per (uid, generation).

Addresses follow docs/behaviour.md §4: pod `<job>-<lower(type)>-<index>` resolves through the job's
headless Service at `<pod>.<job>.<ns>.svc`; a replica type's port is the framework container's
port named after the framework (`tfjob-port`, …), else the framework's default port.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from kubetrain.frameworks import hostnetwork

# The progress endpoint's CA ConfigMap of a job of these kinds: `<job>-trainer-status`.
PROGRESS_CA_SUFFIX = "-trainer-status"
# Restart policies as written in the replica spec (ExitCode becomes Never on the pod).
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")


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


def framework_container_index(template: Mapping[str, Any], container_name: str) -> int:
    """The container named after the framework, else container 0 (docs/behaviour.md §2)."""
    containers = (template.get("spec") or {}).get("containers") or []
    for i, c in enumerate(containers):
        if isinstance(c, Mapping) and c.get("name") == container_name:
            return i
    return 0


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


def _replicas_value(raw: Any, default: int) -> int | None:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        return None
    return raw


def build_layout(
    obj: Mapping[str, Any],
    framework: FrameworkInfo,
    *,
    per_pod_services: bool = False,
    host_network: hostnetwork.HostNetwork | None = None,
) -> tuple[JobLayout | None, list[str]]:
    """The engine's layout of a (defaulted) job dict, or the problems that prevent one.
    `per_pod_services`: pods are addressed by their own Services (`per-pod` service mode);
    `host_network`: the job's host-network annotations as read at the edge (read here if None).

    Tolerates a job that was not defaulted: replica keys are matched case-insensitively,
    `replicas` defaults to 1 and `restartPolicy` to the framework's default, so `render` and
    the planner agree even when the mutating webhook is not installed.
    """
    errors: list[str] = []
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        errors.append("metadata.name: Required value: the job needs a name")
    if not isinstance(spec, Mapping):
        errors.append("spec: Required value: the job needs a spec")
        return None, errors
    field_name = framework.replica_field
    raw_map = spec.get(field_name)
    if not isinstance(raw_map, Mapping) or not raw_map:
        errors.append(
            f"spec.{field_name}: Required value: at least one replica type of "
            f"{', '.join(framework.replica_types)}"
        )
        return None, errors
    canonical = {t.lower(): t for t in framework.replica_types}
    found: dict[str, tuple[str, Any]] = {}
    for key, rspec in raw_map.items():
        ctype = canonical.get(str(key).lower())
        if ctype is None:
            errors.append(
                f"spec.{field_name}[{key}]: Unsupported value: must be one of "
                f"{', '.join(framework.replica_types)}"
            )
            continue
        if ctype in found:  # `worker` and `Worker`: never let one silently replace the other
            errors.append(
                f"spec.{field_name}[{key}]: Duplicate value: same replica type as {found[ctype][0]!r} "
                "(replica type names ignore case)"
            )
            continue
        found[ctype] = (str(key), rspec)
    replicas: dict[str, ReplicaLayout] = {}
    for ctype in framework.replica_types:  # priority order
        if ctype not in found:
            continue
        key, rspec = found[ctype]
        path = f"spec.{field_name}[{key}]"
        if not isinstance(rspec, Mapping):
            errors.append(f"{path}: Invalid value: must be an object with replicas and template")
            continue
        count = _replicas_value(rspec.get("replicas"), framework.replicas_default(ctype))
        if count is None:
            value = rspec.get("replicas")
            errors.append(f"{path}.replicas: Invalid value: {value!r}: must be an integer >= 0")
            continue
        template = rspec.get("template")
        containers = (template.get("spec") or {}).get("containers") if isinstance(template, Mapping) else None
        if not isinstance(containers, list) or not containers:
            errors.append(f"{path}.template.spec.containers: Required value: at least one container")
            continue
        policy = rspec.get("restartPolicy") or framework.restart_policy_default(ctype)
        if policy not in RESTART_POLICIES:
            errors.append(
                f"{path}.restartPolicy: Unsupported value: {policy!r}: must be one of "
                f"{', '.join(RESTART_POLICIES)}"
            )
            continue
        assert isinstance(template, Mapping)
        index = framework_container_index(template, framework.container_name)
        container = containers[index] if isinstance(containers[index], Mapping) else None
        port = container_port(container, framework.port_name, framework.default_port)
        replicas[ctype] = ReplicaLayout(ctype, count, template, policy, port, index)
    if errors or not isinstance(name, str):
        return None, errors
    namespace = meta.get("namespace") or "default"
    annotations = _annotations_of(meta)
    net = host_network if host_network is not None else hostnetwork.read_host_network(annotations)
    host_ports: dict[tuple[str, int], int] = {}
    if net.enabled:
        slots = [(t, i) for t, r in replicas.items() for i in range(r.replicas)]
        host_ports = hostnetwork.assign_ports(str(namespace), name, slots, *net.port_range)
    layout = JobLayout(
        kind=str(obj.get("kind") or framework.kind),
        api_version=str(obj.get("apiVersion") or "kubetrain.io/v1"),
        name=name,
        namespace=str(namespace),
        uid=str(meta.get("uid") or ""),
        spec=spec,
        replicas=replicas,
        port_name=framework.port_name,
        host_ports=host_ports,
        annotations=annotations,
        resource=framework.plural,
        progress_ca_config_map=f"{name}{PROGRESS_CA_SUFFIX}",
    )
    if per_pod_services:
        layout = replace(layout, host_format=framework.per_pod_host_format, per_pod_services=True)
    return layout, []


def _annotations_of(meta: Mapping[str, Any]) -> dict[str, Any]:
    value = meta.get("annotations")
    return dict(value) if isinstance(value, Mapping) else {}


class FrameworkInfo(Protocol):
    """The descriptor attributes `build_layout` reads (a subset of the Framework protocol)."""

    @property
    def kind(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def replica_field(self) -> str: ...
    @property
    def replica_types(self) -> tuple[str, ...]: ...
    @property
    def container_name(self) -> str: ...
    @property
    def port_name(self) -> str: ...
    @property
    def default_port(self) -> int: ...
    @property
    def default_restart_policy(self) -> str: ...
    def replicas_default(self, replica_type: str) -> int: ...
    def restart_policy_default(self, replica_type: str) -> str: ...
    @property
    def per_pod_host_format(self) -> str: ...
