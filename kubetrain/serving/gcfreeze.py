"""When to freeze the long-lived objects out of the garbage collector's full collections.

A full (generation-2) collection traverses every container object the collector tracks. In the
operator and in devcluster most of them are the caches and the store: trees of dicts and lists
decoded from JSON, alive for long and free of reference cycles, so a full collection spends its
pause proving again that they are reachable. `gc.freeze()` moves every tracked object into a
permanent generation that collections do not scan; a frozen object is still freed by reference
counting when its last reference goes, only a reference *cycle* among frozen objects is never
collected while it stays frozen.

`FreezePolicy` (a `gc.callbacks` callback) freezes the survivors of each full collection, so the
next one scans only the objects made since. To bound what frozen cycles can hold, it thaws
(`gc.unfreeze()`) when the frozen objects have grown past `factor` times their count right after
the last thorough collection (one that scanned everything): the next full collection is thorough
again, frees the cycles and sets the new count. Frozen memory is thus at most about `factor` times
the live objects at the last thorough collection, and thorough (long) collections happen when
the heap has grown `factor`-fold instead of at every quarter's growth. Counting the frozen
objects walks all of them (`gc.get_freeze_count`), as long as a scan of them would take, so the
policy adds each full collection's survivors to its count and counts exactly only when that
estimate, which never subtracts frozen objects freed since, passes the limit.

`configure(environ)` reads `KUBETRAIN_GC_FREEZE` (`off`, or the factor; default
`DEFAULT_FACTOR`) and installs the policy in this process.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubetrain.serving.gcpause import GcCallback
from kubetrain.serving.metrics import GC_FROZEN

log = logging.getLogger(__name__)

ENV = "KUBETRAIN_GC_FREEZE"
DEFAULT_FACTOR = 4.0
MIN_BASELINE = 10_000  # objects: a thaw is never asked for below factor x this


class Collector(Protocol):
    """The part of the `gc` module the policy uses (injected in tests)."""

    def collect(self) -> int: ...

    def freeze(self) -> None: ...

    def unfreeze(self) -> None: ...

    def get_freeze_count(self) -> int:
        """Exact, but walks every frozen object: called seldom, never at every collection."""
        ...

    def survivors(self) -> int:
        """Objects in the oldest generation: after a full collection, the ones it left."""
        ...


class PythonCollector:
    """`Collector` of this interpreter's `gc` module."""

    def collect(self) -> int:
        return gc.collect()

    def freeze(self) -> None:
        gc.freeze()

    def unfreeze(self) -> None:
        gc.unfreeze()

    def get_freeze_count(self) -> int:
        return gc.get_freeze_count()

    def survivors(self) -> int:
        return len(gc.get_objects(generation=2))


@dataclass
class FreezePolicy(GcCallback):
    collector: Collector = field(default_factory=PythonCollector)
    factor: float = DEFAULT_FACTOR
    report: Callable[[int], None] = lambda frozen: None  # the frozen-objects gauge
    # Frozen objects right after the last thorough collection (None: there was none yet).
    baseline: int | None = None
    # At least the frozen objects: exact at each count, plus every full collection's survivors
    # frozen since (objects frozen and freed since by reference counting are not subtracted).
    frozen: int = 0
    # Nothing is frozen since the last thaw (or start): the next full collection scans everything.
    thorough_next: bool = True
    freezes: int = 0
    thaws: int = 0

    def start(self) -> None:
        """At process start (after the imports, before serving): collect once and freeze what
        is left — modules, classes, functions, alive for the process's life — so that not even
        the first full collection scans them."""
        self.collector.collect()
        self.collector.freeze()
        self.baseline = self.frozen = self.collector.get_freeze_count()
        self.thorough_next = False
        self.report(self.frozen)

    def limit(self) -> float:
        return self.factor * max(self.baseline or 0, MIN_BASELINE)

    def after_collection(self, generation: int) -> str:
        """What to do once a collection of `generation` finished: "freeze", "thaw" or "none"."""
        if generation < 2:
            return "none"
        survivors = self.collector.survivors()  # O(survivors): what this collection scanned anyway
        self.collector.freeze()
        self.freezes += 1
        if self.thorough_next:  # nothing was frozen: the survivors are all there is
            self.thorough_next = False
            self.baseline = self.frozen = survivors
            self.report(self.frozen)
            return "freeze"
        self.frozen += survivors
        if self.frozen > self.limit():
            # The estimate only grows; count exactly (a walk of every frozen object, once per
            # this much growth) before deciding on a complete scan.
            self.frozen = self.collector.get_freeze_count()
            if self.frozen > self.limit():
                self.collector.unfreeze()
                self.thaws += 1
                self.thorough_next = True
                self.frozen = 0
                self.report(0)
                return "thaw"
        self.report(self.frozen)
        return "freeze"

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            self.after_collection(int(info.get("generation", 0)))


class GcConfigError(ValueError):
    """`KUBETRAIN_GC_FREEZE` holds a value that is not `off` nor a factor ≥ 1."""


def factor_from(environ: Mapping[str, str]) -> float | None:
    """The thaw factor `KUBETRAIN_GC_FREEZE` asks for; None when it turns freezing off."""
    raw = environ.get(ENV, "").strip().lower()
    if raw == "":
        return DEFAULT_FACTOR
    if raw in ("off", "0", "false", "no"):
        return None
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value >= 1.0 or value == float("inf"):
        raise GcConfigError(
            f"{ENV}={environ[ENV]!r} is not valid: use 'off', or a number ≥ 1 (the growth of the "
            f"frozen objects that makes the next full collection scan everything; default "
            f"{DEFAULT_FACTOR:g})"
        )
    return value


_installed: FreezePolicy | None = None


def configure(environ: Mapping[str, str]) -> FreezePolicy | None:
    """Install the policy `environ` asks for in this process (once); None when it is off."""
    global _installed
    factor = factor_from(environ)
    if _installed is not None:
        _installed.uninstall()
        _installed = None
    if factor is None:
        return None
    _installed = FreezePolicy(factor=factor, report=GC_FROZEN.set)
    _installed.start()
    _installed.install()
    log.debug("garbage collector: freezing survivors of full collections (thaw at %gx)", factor)
    return _installed


__all__ = ["DEFAULT_FACTOR", "ENV", "Collector", "FreezePolicy", "GcConfigError", "configure", "factor_from"]
