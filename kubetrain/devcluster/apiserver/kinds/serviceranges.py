"""The ranges Service cluster IPs and node ports are allocated from, as kube-apiserver's
allocators decide (k8s.io/kubernetes pkg/registry/core/service/ipallocator and portallocator):
pure functions of the range, what is in use and a random source.

- Cluster IPs come from the service CIDR (devcluster's is kubeadm's default, `10.96.0.0/12`).
  Its network address and, for IPv4, its broadcast address are never handed out; the first
  address (`10.96.0.1`) is the `kubernetes` Service's (ipallocator `NewIPAllocator`).
- Node ports come from `30000-32767` (kube-apiserver's `--service-node-port-range` default).
- A requested value is checked, in order: in the range at all (`MetaAllocator.getAllocator`:
  `the provided network does not match the current range`; ports: portallocator
  `ErrNotInRange`), usable (`ErrNotInRange`: `provided IP 10.96.0.0 is not in the valid range`),
  free (`ErrAllocated`: `provided IP is already allocated` / `provided port is already
  allocated`).
- A value picked for a request that names none is random, from the upper part of the range
  first: the lower `min(max(16, size/16), 256)` addresses, `min(max(16, size/32), 128)` ports,
  are kept for static requests and only used once the upper part is full (KEP-3070/KEP-3668:
  ipallocator `allocateNextService`, allocator `randomScanStrategyWithOffset.AllocateBit`).
  `None` means the range is full (`ErrFull`).
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Collection
from dataclasses import dataclass

SERVICE_CIDR = "10.96.0.0/12"
NODE_PORT_BASE, NODE_PORT_SIZE = 30000, 2768  # 30000-32767

IP_MISMATCHED = "the provided network does not match the current range"  # ErrMismatchedNetwork
IP_ALLOCATED = "provided IP is already allocated"  # ipallocator.ErrAllocated
PORT_ALLOCATED = "provided port is already allocated"  # portallocator.ErrAllocated
FULL = "range is full"  # ErrFull, of both


def _offset(size: int, low: int, step: int, high: int) -> int:
    """`calculateRangeOffset`: `min(max(low, size/step), high)`, none for a small range."""
    if size <= low:
        return 0
    return min(max(low, size // step), high)


def pick(size: int, offset: int, used: Collection[int], rng: random.Random) -> int | None:
    """A free index in `[0, size)`: scanning from a random start in `[offset, size)`, wrapping
    there, then likewise in `[0, offset)` (`randomScanStrategyWithOffset.AllocateBit`)."""
    if len(used) >= size:
        return None
    for first, count in ((offset, size - offset), (0, offset)):
        if count <= 0:
            continue
        start = rng.randrange(count)
        for i in range(count):
            at = first + (start + i) % count
            if at not in used:
                return at
    return None


@dataclass(frozen=True)
class IPRange:
    """The usable addresses of a service CIDR, as integers."""

    cidr: str = SERVICE_CIDR

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(self.cidr)

    @property
    def first(self) -> int:
        return int(self.network.network_address) + 1

    @property
    def last(self) -> int:
        net = self.network
        return int(net.broadcast_address) - (1 if net.version == 4 else 0)

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def first_ip(self) -> str:
        """The `kubernetes` Service's address (controlplane `ServiceIPRange`: the first usable)."""
        return str(ipaddress.ip_address(self.first))

    def problem(self, ip: str, used: Collection[int]) -> str | None:
        """Why `ip` cannot be allocated, or None (the address is well-formed: validated before)."""
        address = ipaddress.ip_address(ip)
        if address not in self.network:
            return IP_MISMATCHED
        if not self.first <= int(address) <= self.last:
            return f"provided IP {address} is not in the valid range"  # ErrNotInRange.Error()
        if int(address) in used:
            return IP_ALLOCATED
        return None

    def next(self, used: Collection[int], rng: random.Random) -> str | None:
        offsets = {u - self.first for u in used if self.first <= u <= self.last}
        at = pick(self.size, _offset(self.size, 16, 16, 256), offsets, rng)
        return None if at is None else str(ipaddress.ip_address(self.first + at))

    def key(self, ip: object) -> int | None:
        """An address as the integer `used` holds, None for what is no IP of this family."""
        if not isinstance(ip, str):
            return None
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return None
        return int(address) if address.version == self.network.version else None


@dataclass(frozen=True)
class PortRange:
    base: int = NODE_PORT_BASE
    size: int = NODE_PORT_SIZE

    def __str__(self) -> str:  # net.PortRange.String()
        return f"{self.base}-{self.base + self.size - 1}"

    def problem(self, port: int, used: Collection[int]) -> str | None:
        if not self.base <= port < self.base + self.size:
            return "provided port is not in the valid range. The range of valid ports is " + str(
                self
            )  # portallocator ErrNotInRange
        if port in used:
            return PORT_ALLOCATED
        return None

    def next(self, used: Collection[int], rng: random.Random) -> int | None:
        offsets = {p - self.base for p in used if self.base <= p < self.base + self.size}
        at = pick(self.size, _offset(self.size, 16, 32, 128), offsets, rng)
        return None if at is None else self.base + at
