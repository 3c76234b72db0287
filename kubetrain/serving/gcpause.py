"""How long Python's cyclic garbage collector stops the process, per collection.

The collector stops the world: while it runs no request is answered, no reconcile advances and
no watch event is read. `GcPauses` times every collection through `gc.callbacks` (the interpreter
calls it with "start" before and "stop" after each one, with the generation collected) and hands
each pause to its sinks: the operator's `kubetrain_gc_pause_seconds{generation}` histogram
(`install_gc_pause_metric`, called once at process start) and, for benchmarks, `PauseStats`
(count, total and longest pause per generation in this process).

```python
pauses = GcPauses([PauseStats().observe])   # or install_gc_pause_metric()
pauses.install(); ...; pauses.uninstall()
```
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetrain.serving.metrics import GC_PAUSE

Sink = Callable[[int, float], None]  # (generation, pause seconds)
GENERATIONS = (0, 1, 2)


class GcCallback:
    """A `gc.callbacks` entry: registered at most once, removed on request."""

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        raise NotImplementedError

    def install(self) -> None:
        """Register with the collector (once); called from the next collection on."""
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


class GcPauses(GcCallback):
    """A `gc.callbacks` callback that measures each collection's pause with `clock`."""

    def __init__(self, sinks: Sequence[Sink], clock: Callable[[], float] = time.perf_counter) -> None:
        self.sinks = list(sinks)
        self.clock = clock
        self._started: float | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self.clock()
            return
        started, self._started = self._started, None
        if phase != "stop" or started is None:
            return
        pause = max(0.0, self.clock() - started)
        generation = int(info.get("generation", 2))
        for sink in self.sinks:
            sink(generation, pause)


@dataclass
class GenerationPauses:
    count: int = 0
    total: float = 0.0
    longest: float = 0.0


@dataclass
class PauseStats:
    """Count, total and longest pause per generation, in-process (a `GcPauses` sink)."""

    by_generation: dict[int, GenerationPauses] = field(
        default_factory=lambda: {g: GenerationPauses() for g in GENERATIONS}
    )

    def observe(self, generation: int, pause: float) -> None:
        stats = self.by_generation.setdefault(generation, GenerationPauses())
        stats.count += 1
        stats.total += pause
        stats.longest = max(stats.longest, pause)

    def summary(self) -> dict[str, dict[str, float]]:
        """{"gen0": {"count", "total_s", "max_ms"}, ...}: what a benchmark prints."""
        return {
            f"gen{g}": {"count": s.count, "total_s": round(s.total, 3), "max_ms": round(1000 * s.longest, 1)}
            for g, s in sorted(self.by_generation.items())
        }


def observe_metric(generation: int, pause: float) -> None:
    GC_PAUSE.labels(generation=str(generation)).observe(pause)


_process_recorder: GcPauses | None = None


def install_gc_pause_metric() -> GcPauses:
    """Record this process's collections in `kubetrain_gc_pause_seconds` (idempotent)."""
    global _process_recorder
    if _process_recorder is None:
        _process_recorder = GcPauses([observe_metric])
    _process_recorder.install()
    return _process_recorder


__all__ = ["GcCallback", "GcPauses", "PauseStats", "install_gc_pause_metric", "observe_metric"]
