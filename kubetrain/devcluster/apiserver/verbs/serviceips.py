"""The cluster IPs and node ports Service writes allocate (kinds/servicealloc.py decides), held
against the store.

Allocation state is not kept apart from the store: what is in use is read from the stored
Services — so a delete, by any path, releases a Service's IP and ports, and nothing has to be
rebuilt — plus what writes still in flight hold (between allocation and the store write, e.g.
while a validating webhook is asked), so two of them never get the same value. Upstream keeps
a bitmap (and IPAddress objects) that its repair controllers reconcile with the Services; here
the Services are the only record, so there is nothing to repair.
"""

from __future__ import annotations

import contextlib
import itertools
import random
from collections.abc import Iterator

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import servicealloc
from kubetrain.devcluster.apiserver.storage.store import Store

SERVICES_KEY = "services"


class ServiceAllocator:
    def __init__(self, store: Store, rng: random.Random) -> None:
        self.store = store
        self.ranges = servicealloc.Ranges(rng)
        self._held: dict[int, tuple[set[int], set[int]]] = {}
        self._ids = itertools.count()

    def in_use(self, skip: tuple[str, str] | None = None) -> tuple[set[int], set[int]]:
        """The cluster IPs (as integers) and node ports taken, but for Service `skip`'s own."""
        ips, ports = servicealloc.in_use(self.store.items(SERVICES_KEY), self.ranges.ips, skip)
        for held_ips, held_ports in self._held.values():
            ips |= held_ips
            ports |= held_ports
        return ips, ports

    @contextlib.contextmanager
    def allocating(self, svc: Obj, old: Obj | None, dry_run: bool) -> Iterator[None]:
        """Prepare and allocate for `svc` (a create when `old` is None); what it claimed is held
        until the block ends: by then the write stored it, or it failed and it is free again."""
        md = svc["metadata"]
        skip = (md.get("namespace", ""), md.get("name", "")) if old is not None else None
        claimed = servicealloc.allocate(svc, old, self.ranges, self.in_use(skip), dry_run)
        token = next(self._ids)
        if not dry_run:
            self._held[token] = claimed
        try:
            yield
        finally:
            self._held.pop(token, None)
