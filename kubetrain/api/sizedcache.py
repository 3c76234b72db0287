"""A least-recently-used cache bounded by the bytes of its entries, not by their number.

```python
cache: SizedLRU[bytes, Result] = SizedLRU(max_bytes=32 * 1024 * 1024, max_entry_bytes=1024 * 1024)
hit = cache.get(key)                       # None when absent
cache.put(key, value, cost=len(key) + 200) # dropped at once when cost > max_entry_bytes
```

An entry count is no bound when keys are whole pod templates: 2,048 entries of 2.8 MB templates
are 5.7 GB. Here each entry is charged a caller-given cost (the key's length plus an estimate of
the value), the least recently used entries are evicted until the total fits `max_bytes`, and an
entry costing more than `max_entry_bytes` is never kept (a huge template is recomputed instead of
pushing every ordinary one out). Safe to share between threads (one lock around each call).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class SizedLRU(Generic[K, V]):
    def __init__(self, *, max_bytes: int, max_entry_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def put(self, key: K, value: V, *, cost: int) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if cost > self.max_entry_bytes:
                return
            self._entries[key] = (value, cost)
            self._bytes += cost
            while self._bytes > self.max_bytes and self._entries:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def bytes(self) -> int:
        """The summed cost of the entries held."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
