"""What the Service registry does to a Service before it is validated: fill in what the client
left out of an update, initialise the IP family fields, allocate cluster IPs and node ports
(k8s.io/kubernetes pkg/registry/core/service/storage: `beginCreate`/`beginUpdate` in
storage.go, `allocateCreate`/`allocateUpdate` in alloc.go), then the strategy's
`dropTypeDependentFields` on update. The ranges and how a value is picked: serviceranges.py.

Pure: what is in use comes in (`in_use` reads it off Services; verbs/serviceips.py gives it
from the store and the writes in flight), what was claimed goes out.

A dry run checks as upstream's dry-run allocators do: a requested IP only for being in range,
a requested port only for being taken; a picked IP is the range's network address, picked ports
count up from 32769 (ipallocator `dryRunAllocator`, portallocator `PortAllocationOperation`).

Not done: health check node ports (`externalTrafficPolicy: Local` LoadBalancers), dual-stack
(the cluster is single-stack IPv4: IPv6 families and IPs are refused as upstream refuses them
on such a cluster), the networking.k8s.io ServiceCIDR and IPAddress objects upstream records
allocations in.
"""

from __future__ import annotations

import random
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import servicevalidation
from kubetrain.devcluster.apiserver.kinds.fielderrors import invalid
from kubetrain.devcluster.apiserver.kinds.servicefields import (
    drop_type_dependent_fields,
    needs_node_port,
    node_port,
    node_ports,
    normalize_cluster_ips,
    patch_allocated_values,
    ports_of,
    should_allocate_node_ports,
    spec_of,
)
from kubetrain.devcluster.apiserver.kinds.serviceranges import FULL, IPRange, PortRange, Taken

DRY_RUN_FIRST_PORT = 32769  # PortAllocationOperation.AllocateNext's guess, dry run


@dataclass
class Ranges:
    """The ranges allocated from and the random source picks draw on."""

    rng: random.Random
    ips: IPRange = field(default_factory=IPRange)
    ports: PortRange = field(default_factory=PortRange)


def in_use(services: Iterable[Obj], ips: IPRange, skip: tuple[str, str] | None) -> tuple[set[int], set[int]]:
    """The cluster IPs (as integers) and node ports `services` hold, but for Service `skip`'s own."""
    taken_ips: set[int] = set()
    taken_ports: set[int] = set()
    for svc in services:
        md = svc["metadata"]
        if skip is not None and (md.get("namespace", ""), md.get("name")) == skip:
            continue
        for ip in spec_of(svc).get("clusterIPs") or []:
            if (key := ips.key(ip)) is not None:
                taken_ips.add(key)
        taken_ports.update(node_ports(svc))
    return taken_ips, taken_ports


def allocate(
    svc: Obj, old: Obj | None, ranges: Ranges, used: tuple[Container[int], Container[int]], dry_run: bool
) -> tuple[set[int], set[int]]:
    """Prepare `svc` (a create when `old` is None) and allocate what it needs, `used` (cluster
    IPs as integers, node ports) being taken; the cluster IPs and node ports claimed. Raises the
    client's error (422 for a refused request, 500 for a full range)."""
    op = _Operation(ranges, used[0], used[1], dry_run, str(svc["metadata"].get("name", "")))
    spec = svc.setdefault("spec", {})
    if old is None:
        normalize_cluster_ips(spec, None)
        op.allocate_create(spec)
    else:
        old_spec = spec_of(old)
        patch_allocated_values(spec, old_spec)
        normalize_cluster_ips(spec, old_spec)
        op.allocate_update(spec, old_spec)
        drop_type_dependent_fields(spec, old_spec)
    return op.claimed_ips, op.claimed_ports


class _Operation:
    """One write's allocations (alloc.go's transaction, without the need to revert: what is
    held is dropped when the write ends, and the store then has it or not)."""

    def __init__(
        self, ranges: Ranges, ips: Container[int], ports: Container[int], dry_run: bool, name: str
    ) -> None:
        self.ranges = ranges
        self.used_ips, self.used_ports = ips, ports
        self.dry_run = dry_run
        self.name = name
        self.claimed_ips: set[int] = set()
        self.claimed_ports: set[int] = set()
        self.taken_ports = Taken(ports, self.claimed_ports)
        self._dry_ports: list[int] = []

    def refuse(self, causes: list[Cause]) -> errors.ApiError:
        return errors.invalid("Service", "", self.name, causes)

    # ---- cluster IPs -------------------------------------------------------------------------
    def allocate_create(self, spec: dict[str, Any]) -> None:
        self.init_ip_families(spec, None)
        self.alloc_cluster_ips(spec)
        if needs_node_port(spec):
            self.init_node_ports(spec)

    def allocate_update(self, spec: dict[str, Any], old: dict[str, Any]) -> None:
        self.init_ip_families(spec, old)
        # updateClusterIPs: only a change from ExternalName allocates (single-stack: no upgrade)
        if old.get("type") == "ExternalName" and spec.get("type") != "ExternalName":
            self.alloc_cluster_ips(spec)
        if needs_node_port(spec):
            self.update_node_ports(spec, old)

    def init_ip_families(self, spec: dict[str, Any], old: dict[str, Any] | None) -> None:
        """`initIPFamilyFields` on a single-stack IPv4 cluster."""
        if spec.get("type") == "ExternalName":
            return
        headless_selectorless = spec.get("clusterIP") == "None" and not spec.get("selector")
        if spec.get("ipFamilyPolicy") is None:
            if old is not None and old.get("ipFamilyPolicy") is not None:
                spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
            else:
                spec["ipFamilyPolicy"] = "RequireDualStack" if headless_selectorless else "SingleStack"
        causes = servicevalidation.cluster_ips_related_causes(spec)
        if causes:
            raise self.refuse(causes)
        policy = spec["ipFamilyPolicy"]
        cluster_ips: list[Any] = list(spec.get("clusterIPs") or [])
        families: list[Any] = list(spec.get("ipFamilies") or [])
        if policy == "SingleStack":
            for field, what in ((cluster_ips, "cluster IPs"), (families, "IP families")):
                if len(field) == 2:
                    causes.append(
                        invalid(
                            "spec.ipFamilyPolicy",
                            policy,
                            "must be 'RequireDualStack' or 'PreferDualStack' when multiple "
                            f"{what} are specified",
                        )
                    )
        for i, ip in enumerate(cluster_ips):
            if ip == "None":
                break
            if i >= len(families):
                family = "IPv6" if ":" in str(ip) else "IPv4"
                if family != "IPv4":
                    causes.append(
                        invalid(
                            f"spec.clusterIPs[{i}]",
                            servicevalidation.json_value(cluster_ips),
                            f"{family} is not configured on this cluster",
                        )
                    )
                else:
                    families.append(family)
        if causes:
            raise self.refuse(causes)
        if headless_selectorless:
            families = families or ["IPv4"]
            if len(families) < 2 and policy != "SingleStack":
                families.append("IPv6" if families[0] == "IPv4" else "IPv4")
            spec["ipFamilies"] = families
            return
        if policy == "RequireDualStack":
            causes.append(
                invalid(
                    "spec.ipFamilyPolicy", policy, "this cluster is not configured for dual-stack services"
                )
            )
        causes += [
            invalid(f"spec.ipFamilies[{i}]", f, "not configured on this cluster")
            for i, f in enumerate(families)
            if f != "IPv4"
        ]
        if causes:
            raise self.refuse(causes)
        spec["ipFamilies"] = families or ["IPv4"]

    def alloc_cluster_ips(self, spec: dict[str, Any]) -> None:
        """`allocClusterIPs` / `allocIPs` for the one (IPv4) family."""
        if spec.get("type") == "ExternalName":
            return
        cluster_ips: list[Any] = list(spec.get("clusterIPs") or [])
        if cluster_ips and cluster_ips[0] == "None":
            return
        if not cluster_ips:
            cluster_ips = [""]
        ranges = self.ranges.ips
        requested = cluster_ips[0]
        if not requested:
            picked = (
                str(ranges.network.network_address)
                if self.dry_run
                else ranges.next(self.used_ips, self.ranges.rng)
            )
            if picked is None:
                raise errors.internal_error(f"failed to allocate a serviceIP: {FULL}")
            ip = picked
        else:
            problem = ranges.problem(requested, set() if self.dry_run else self.used_ips)
            if problem is not None:
                detail = f"failed to allocate IP {requested}: {problem}"
                value = servicevalidation.json_value(cluster_ips)
                raise self.refuse([invalid("spec.clusterIPs", value, detail)])
            ip = requested
        key = ranges.key(ip)
        if key is not None:
            self.claimed_ips.add(key)
        cluster_ips[0] = ip
        spec["clusterIPs"] = cluster_ips
        spec["clusterIP"] = ip

    # ---- node ports --------------------------------------------------------------------------
    def _take(self, port: int, path: str) -> None:
        taken = self.taken_ports
        if self.dry_run:
            problem = self.ranges.ports.problem(port, taken) if port in taken else None
        else:
            problem = self.ranges.ports.problem(port, taken)
        if problem is not None:
            raise self.refuse([invalid(path, port, problem)])
        self.claimed_ports.add(port)
        self._dry_ports.append(port)

    def _next_port(self) -> int:
        if self.dry_run:
            port = max(self._dry_ports, default=DRY_RUN_FIRST_PORT - 1) + 1
            self._dry_ports.append(port)
            return port
        picked = self.ranges.ports.next(self.taken_ports, self.ranges.rng)
        if picked is None:
            raise errors.internal_error(f"failed to allocate a nodePort: {FULL}")
        self.claimed_ports.add(picked)
        return picked

    def init_node_ports(self, spec: dict[str, Any]) -> None:
        """`initNodePorts`: ports with the same number (TCP and UDP, say) share a node port."""
        ports = ports_of(spec)
        by_port: dict[Any, int] = {}
        allocate = should_allocate_node_ports(spec)
        for i, port in enumerate(ports):
            wanted = node_port(port)
            if not wanted and not allocate:
                continue
            path = f"spec.ports[{i}].nodePort"
            known = by_port.get(port.get("port"), 0)
            if not known:
                requested = next(
                    (n for p in ports if p.get("port") == port.get("port") and (n := node_port(p))), 0
                )
                if requested:
                    self._take(requested, path)
                    port["nodePort"] = by_port[port.get("port")] = requested
                else:
                    port["nodePort"] = by_port[port.get("port")] = self._next_port()
            elif wanted != known:
                if not wanted:
                    port["nodePort"] = known
                else:
                    self._take(wanted, path)

    def update_node_ports(self, spec: dict[str, Any], old: dict[str, Any]) -> None:
        """`updateNodePorts`: keep the old service's, allocate the rest."""
        old_numbers = node_ports({"spec": old})
        allocate = should_allocate_node_ports(spec)
        seen: set[tuple[Any, int]] = set()
        for i, port in enumerate(ports_of(spec)):
            wanted = node_port(port)
            if not wanted and not allocate:
                continue
            if wanted:
                if wanted not in old_numbers and wanted not in self.claimed_ports:
                    self._take(wanted, f"spec.ports[{i}].nodePort")
            else:
                wanted = port["nodePort"] = self._next_port()
            key = (port.get("protocol"), wanted)
            if key in seen:
                raise errors.internal_error(f"duplicate nodePort: {{{key[0]} {wanted}}}")
            seen.add(key)
