"""The cluster IPs and node ports Service writes allocate (kinds/servicealloc.py decides), held
against the store.

Allocation state is not kept apart from the store: what is in use is what the stored Services
hold — indexed from the store's events as they happen (and from the stored Services when the
allocator is made), so a delete by any path releases a Service's IP and ports and nothing has
to be rebuilt — plus what writes still in flight hold (between allocation and the store write,
e.g. while a validating webhook is asked), so two of them never get the same value. Upstream
keeps a bitmap (and IPAddress objects) that its repair controllers reconcile with the Services;
here the Services are the only record, so there is nothing to repair.
"""

from __future__ import annotations

import contextlib
import itertools
import random
from collections import Counter
from collections.abc import Container, Iterator

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import servicealloc
from kubetrain.devcluster.apiserver.kinds.serviceranges import Taken
from kubetrain.devcluster.apiserver.storage.store import Event, Store

SERVICES_KEY = "services"
Key = tuple[str, str]  # namespace, name


class _Others:
    """The values of `counts` held by a Service other than the one whose are `own`."""

    def __init__(self, counts: Counter[int], own: tuple[int, ...]) -> None:
        self.counts, self.own = counts, own

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        return self.counts.get(value, 0) > self.own.count(value)


class ServiceAllocator:
    def __init__(self, store: Store, rng: random.Random) -> None:
        self.store = store
        self.ranges = servicealloc.Ranges(rng)
        self._held: dict[int, tuple[set[int], set[int]]] = {}
        self._ids = itertools.count()
        self._ips: Counter[int] = Counter()
        self._ports: Counter[int] = Counter()
        self._own: dict[Key, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        for svc in store.items(SERVICES_KEY):
            self._record(svc)
        store.listeners.append(self._observe)

    def _values(self, svc: Obj) -> tuple[tuple[int, ...], tuple[int, ...]]:
        ips, ports = servicealloc.in_use([svc], self.ranges.ips, None)
        return tuple(ips), tuple(ports)

    def _record(self, svc: Obj) -> None:
        md = svc["metadata"]
        key = (md.get("namespace", ""), md["name"])
        self._forget(key)
        ips, ports = self._own[key] = self._values(svc)
        self._ips.update(ips)
        self._ports.update(ports)

    def _forget(self, key: Key) -> None:
        ips, ports = self._own.pop(key, ((), ()))
        for counts, values in ((self._ips, ips), (self._ports, ports)):
            for value in values:
                counts[value] -= 1
                if counts[value] <= 0:
                    del counts[value]

    def _observe(self, event: Event) -> None:
        if event.rkey != SERVICES_KEY:
            return
        if event.type == "DELETED":
            md = event.obj["metadata"]
            self._forget((md.get("namespace", ""), md["name"]))
        else:
            self._record(event.obj)

    def in_use(self, skip: Key | None = None) -> tuple[Container[int], Container[int]]:
        """The cluster IPs (as integers) and node ports taken, but for Service `skip`'s own."""
        own_ips, own_ports = self._own.get(skip, ((), ())) if skip is not None else ((), ())
        held_ips = [ips for ips, _ in self._held.values()]
        held_ports = [ports for _, ports in self._held.values()]
        return (
            Taken(_Others(self._ips, own_ips), *held_ips),
            Taken(_Others(self._ports, own_ports), *held_ports),
        )

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
