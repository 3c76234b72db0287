"""The Service registry's field fix-ups around allocation (k8s.io/kubernetes
pkg/registry/core/service/storage `patchAllocatedValues` and `NormalizeClusterIPs`, the
strategy's `dropTypeDependentFields`) and the type predicates alloc.go decides with."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj

NODE_PORT_TYPES = ("NodePort", "LoadBalancer")


def spec_of(svc: Obj | None) -> dict[str, Any]:
    spec = (svc or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def ports_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    ports = spec.get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def node_port(port: dict[str, Any]) -> int:
    value = port.get("nodePort")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def node_ports(svc: Obj | None) -> list[int]:
    """`collectServiceNodePorts`: the service's node ports (health check port not included)."""
    return [n for p in ports_of(spec_of(svc)) if (n := node_port(p))]


def needs_cluster_ip(spec: dict[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def needs_node_port(spec: dict[str, Any]) -> bool:
    return spec.get("type") in NODE_PORT_TYPES


def should_allocate_node_ports(spec: dict[str, Any]) -> bool:
    """`shouldAllocateNodePorts`: NodePort services, LoadBalancers unless they opted out."""
    if spec.get("type") == "NodePort":
        return True
    return spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False


def normalize_cluster_ips(spec: dict[str, Any], old: dict[str, Any] | None) -> None:
    """`NormalizeClusterIPs` (pkg/registry/core/service/storage): keep `clusterIP` and
    `clusterIPs` in step for clients that only know one of them."""
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if old is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    old_ip, old_ips = old.get("clusterIP") or "", old.get("clusterIPs") or []
    if old_ips and not ips and old_ip == ip:
        spec["clusterIPs"] = ips = list(old_ips)
    same = list(ips) == list(old_ips)
    if old_ip != ip:
        if old_ip and not ip:
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [ip]


def patch_allocated_values(spec: dict[str, Any], old: dict[str, Any]) -> None:
    """`patchAllocatedValues`: an update that leaves out what was allocated keeps it."""
    if needs_cluster_ip(old) and needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old.get("clusterIP"):
            spec["clusterIP"] = old["clusterIP"]
        if not spec.get("clusterIPs") and old.get("clusterIPs"):
            spec["clusterIPs"] = list(old["clusterIPs"])
    if needs_node_port(old) and needs_node_port(spec):
        used = set(node_ports({"spec": old})) & set(node_ports({"spec": spec}))
        by_name = {p.get("name", ""): node_port(p) for p in ports_of(old)}
        for port in ports_of(spec):
            if not node_port(port):
                value = by_name.get(port.get("name", ""), 0)
                if value and value not in used:
                    port["nodePort"] = value


def same_node_ports(spec: dict[str, Any], old: dict[str, Any]) -> bool:
    """`sameNodePorts`: no node port that the old service did not have."""
    return set(node_ports({"spec": spec})) <= set(node_ports({"spec": old}))


def drop_type_dependent_fields(spec: dict[str, Any], old: dict[str, Any]) -> None:
    """The strategy's `dropTypeDependentFields`: what the new type has no use for goes, when
    the client did not also change it (then validation says what is wrong)."""
    if needs_cluster_ip(old) and not needs_cluster_ip(spec):
        if spec.get("clusterIPs") == old.get("clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if spec.get("ipFamilies") == old.get("ipFamilies"):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == old.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if needs_node_port(old) and not needs_node_port(spec) and same_node_ports(spec, old):
        for port in ports_of(spec):
            port.pop("nodePort", None)
    if (
        old.get("type") == "LoadBalancer"
        and spec.get("type") != "LoadBalancer"
        and spec.get("allocateLoadBalancerNodePorts") == old.get("allocateLoadBalancerNodePorts")
    ):
        spec.pop("allocateLoadBalancerNodePorts", None)
    if (
        old.get("type") in NODE_PORT_TYPES
        and spec.get("type") not in NODE_PORT_TYPES
        and spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy")
    ):
        spec.pop("externalTrafficPolicy", None)
