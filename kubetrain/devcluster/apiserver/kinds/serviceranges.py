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
from collections.abc import Callable, Container
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


def pick(size: int, offset: int, taken: Callable[[int], bool], rng: random.Random) -> int | None:
    """A free index in `[0, size)`: scanning from a random start in `[offset, size)`, wrapping
    there, then likewise in `[0, offset)` (`randomScanStrategyWithOffset.AllocateBit`)."""
    for first, count in ((offset, size - offset), (0, offset)):
        if count <= 0:
            continue
        start = rng.randrange(count)
        for i in range(count):
            at = first + (start + i) % count
            if not taken(at):
                return at
    return None


class Taken:
    """Values in use: in any of `parts` (sets, or counters of how many hold each value)."""

    def __init__(self, *parts: Container[int]) -> None:
        self.parts = parts

    def __contains__(self, value: object) -> bool:
        return any(value in part for part in self.parts)


class IPRange:
    """The usable addresses of a service CIDR, as integers."""

    def __init__(self, cidr: str = SERVICE_CIDR) -> None:
        self.cidr = cidr
        self.network = ipaddress.ip_network(cidr)
        self.first = int(self.network.network_address) + 1
        self.last = int(self.network.broadcast_address) - (1 if self.network.version == 4 else 0)
        self.size = self.last - self.first + 1

    def first_ip(self) -> str:
        """The `kubernetes` Service's address (controlplane `ServiceIPRange`: the first usable)."""
        return str(ipaddress.ip_address(self.first))

    def problem(self, ip: str, used: Container[int]) -> str | None:
        """Why `ip` cannot be allocated, or None (the address is well-formed: validated before)."""
        address = ipaddress.ip_address(ip)
        if address not in self.network:
            return IP_MISMATCHED
        if not self.first <= int(address) <= self.last:
            return f"provided IP {address} is not in the valid range"  # ErrNotInRange.Error()
        if int(address) in used:
            return IP_ALLOCATED
        return None

    def next(self, used: Container[int], rng: random.Random) -> str | None:
        first = self.first
        at = pick(self.size, _offset(self.size, 16, 16, 256), lambda i: first + i in used, rng)
        return None if at is None else str(ipaddress.ip_address(first + at))

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

    def problem(self, port: int, used: Container[int]) -> str | None:
        if not self.base <= port < self.base + self.size:
            return "provided port is not in the valid range. The range of valid ports is " + str(
                self
            )  # portallocator ErrNotInRange
        if port in used:
            return PORT_ALLOCATED
        return None

    def next(self, used: Container[int], rng: random.Random) -> int | None:
        base = self.base
        at = pick(self.size, _offset(self.size, 16, 32, 128), lambda i: base + i in used, rng)
        return None if at is None else base + at
