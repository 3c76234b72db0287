"""A bounded cache of answers that expire: per key one value until `ttl` seconds on `clock`
have passed; past `max_entries` the least recently used key is dropped first. What the
dashboard keeps of the reviews it makes as the user (access, who the user is)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

from kubetrain.kube.clock import SYSTEM_CLOCK, Clock

K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    def __init__(self, ttl: float, max_entries: int, clock: Clock | None = None) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self.clock = clock or SYSTEM_CLOCK
        self._entries: OrderedDict[K, tuple[V, float]] = OrderedDict()

    def get(self, key: K) -> tuple[bool, V | None]:
        """(True, value) while `key`'s answer is fresh, else (False, None)."""
        hit = self._entries.get(key)
        if hit is None or hit[1] <= self.clock.monotonic():
            return False, None
        self._entries.move_to_end(key)
        return True, hit[0]

    def put(self, key: K, value: V) -> None:
        self._entries[key] = (value, self.clock.monotonic() + self.ttl)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
