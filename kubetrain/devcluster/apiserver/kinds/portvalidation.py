"""A pod's container ports as kube-apiserver validates and defaults them (k8s.io/kubernetes
pkg/apis/core/validation, validation.go; pkg/apis/core/v1 defaults.go), with upstream's causes.

- `validateContainerPorts` (per container): port names are IANA_SVC_NAMEs (`IsValidPortName`),
  unique in the container; containerPort required and 1-65535, hostPort 0 or 1-65535; protocol
  one of SCTP, TCP, UDP.
- `AccumulateUniqueHostPorts` (`checkHostPortConflicts`): a hostPort is used once per protocol
  and hostIP across the regular containers (and within each init container, as they run one by
  one): Duplicate "TCP//8080" at the second one.
- `validatePodHostNetworkDeps`: with hostNetwork, every container port's hostPort equals its
  containerPort (after v1 defaulting gave an unset hostPort the containerPort).
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import (
    dicts,
    duplicate,
    invalid,
    not_supported,
    required,
)
from kubetrain.devcluster.apiserver.kinds.objectmeta import PORT_RANGE, port_name_problems

PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")  # sets.List(supportedPortProtocols): sorted


def host_port_conflicts(containers: list[tuple[int, dict[str, Any]]], path: str) -> list[Cause]:
    """`AccumulateUniqueHostPorts`: a hostPort is used once per protocol and hostIP — across the
    regular containers, and within each init container (they run one by one)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, c in containers:
        for j, port in dicts(c.get("ports")):
            host = port.get("hostPort")
            if not isinstance(host, int) or isinstance(host, bool) or not host:
                continue
            key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{host}"
            if key in seen:
                causes.append(duplicate(f"{path}[{i}].ports[{j}].hostPort", key))
            seen.add(key)
    return causes


def host_network_port_causes(spec: dict[str, Any]) -> list[Cause]:
    """`validatePodHostNetworkDeps` for a Pod: with hostNetwork, each container port's hostPort
    is its containerPort (`default_host_network_ports` fills an unset one, as upstream does)."""
    causes: list[Cause] = []
    for i, c in dicts(spec.get("containers")):
        for j, port in dicts(c.get("ports")):
            host = port.get("hostPort") or 0
            if host != port.get("containerPort"):
                message = "must match `containerPort` when `hostNetwork` is true"
                causes.append(invalid(f"spec.containers[{i}].ports[{j}].hostPort", host, message))
    return causes


def default_host_network_ports(spec: dict[str, Any]) -> None:
    """v1 `SetDefaults_Pod` → `defaultHostNetworkPorts`: with hostNetwork, a port's unset hostPort
    becomes its containerPort (containers and init containers)."""
    if spec.get("hostNetwork") is not True:
        return
    for field in ("containers", "initContainers"):
        for _, c in dicts(spec.get(field)):
            for _, port in dicts(c.get("ports")):
                if not port.get("hostPort") and "containerPort" in port:
                    port["hostPort"] = port["containerPort"]


def port_causes(ports: Any, path: str) -> list[Cause]:
    """`validateContainerPorts`: names unique within this container's ports."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in dicts(ports):
        at = f"{path}[{i}]"
        name = port.get("name")
        if isinstance(name, str) and name:
            problems = port_name_problems(name)
            if problems:
                causes += [invalid(f"{at}.name", name, p) for p in problems]
            elif name in names:
                causes.append(duplicate(f"{at}.name", name))
            else:
                names.add(name)
        number = port.get("containerPort")
        if not number:
            causes.append(required(f"{at}.containerPort"))
        elif isinstance(number, int) and not 1 <= number <= 65535:
            causes.append(invalid(f"{at}.containerPort", number, PORT_RANGE))
        host = port.get("hostPort")
        if isinstance(host, int) and host and not 1 <= host <= 65535:
            causes.append(invalid(f"{at}.hostPort", host, PORT_RANGE))
        causes += protocol_causes(port.get("protocol"), f"{at}.protocol")
    return causes


def protocol_causes(protocol: Any, path: str) -> list[Cause]:
    if not protocol:
        return [required(path)]
    return [] if protocol in PORT_PROTOCOLS else [not_supported(path, protocol, PORT_PROTOCOLS)]
