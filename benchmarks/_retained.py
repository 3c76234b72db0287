"""What the devcluster process retains between churn waves (not a benchmark itself).

`Retained.sample(stack)` notes, after a wave, the stored objects by resource, the watch history's
length, the request log's length, the pod simulator's and gang simulator's per-pod bookkeeping,
and the live objects by type (gc.get_objects(), which lists container objects only: dicts,
lists, instances; strings and numbers are counted in RSS but not here). `growth()` gives, from
the first sampled wave to the last, what grew; with `--tracemalloc` a tracemalloc snapshot is
taken at the first and last sample and the allocation sites whose retained size grew most are
listed (file:line, KiB), which names the owner of what is kept.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections import Counter
from typing import Any

from kubetrain.dev.stack import DevStack


def type_counts() -> Counter[str]:
    return Counter(type(o).__name__ for o in gc.get_objects())


def bookkeeping(stack: DevStack) -> dict[str, int]:
    """Sizes of the per-object maps devcluster's parts keep (each should return to its idle size)."""
    cluster = stack.cluster
    out: dict[str, int] = {
        "watch_history": len(cluster.store._history),
        "by_uid": len(cluster.store._by_uid),
        "dependents": len(cluster.store._dependents),
        "request_log": len(cluster.requests.records),
        "event_lines": len(cluster.store.event_lines._lines),
    }
    sim = stack.simulator
    if sim is not None and hasattr(sim, "remembered"):
        out.update({f"sim_{k}": v for k, v in sim.remembered().items()})
    elif sim is not None:  # a tree from before PodSimulator.remembered (a before/after run)
        out["sim_pods"] = len(sim._pods)
        out["sim_locks"] = len(sim._timers._locks)
    return out


class Retained:
    def __init__(self, trace: bool, top: int = 15) -> None:
        self.trace, self.top = trace, top
        self.first_types: Counter[str] | None = None
        self.first_keep: dict[str, int] | None = None
        self.first_snapshot: tracemalloc.Snapshot | None = None
        self.last_types: Counter[str] = Counter()
        self.last_keep: dict[str, int] = {}
        self.last_snapshot: tracemalloc.Snapshot | None = None
        if trace:
            tracemalloc.start(8)

    def sample(self, stack: DevStack) -> dict[str, Any]:
        gc.collect()
        types = type_counts()
        keep = bookkeeping(stack)
        stored = {rkey: stack.cluster.store.count(rkey) for rkey in stack.cluster.store.resource_keys()}
        if self.first_types is None:
            self.first_types, self.first_keep = types, keep
            if self.trace:
                self.first_snapshot = tracemalloc.take_snapshot()
        else:
            self.last_types, self.last_keep = types, keep
            if self.trace:
                self.last_snapshot = tracemalloc.take_snapshot()
        return {"stored": {k: v for k, v in sorted(stored.items()) if v}, **keep, "gc_objects": types.total()}

    def growth(self) -> dict[str, Any]:
        if self.first_types is None or not self.last_types:
            return {}
        grown = self.last_types - self.first_types
        out: dict[str, Any] = {
            "gc_types_grown": dict(grown.most_common(self.top)),
            "bookkeeping_grown": {
                k: self.last_keep[k] - v for k, v in (self.first_keep or {}).items() if self.last_keep[k] != v
            },
        }
        if self.first_snapshot is not None and self.last_snapshot is not None:
            stats = self.last_snapshot.compare_to(self.first_snapshot, "lineno")
            out["tracemalloc_grown_kib"] = [
                (str(s.traceback[0]), round(s.size_diff / 1024, 1), s.count_diff)
                for s in stats[: self.top]
                if s.size_diff > 0
            ]
        return out
