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
(`gc.unfreeze()`) when the frozen set has grown past `factor` times its size right after the
last thorough collection (one that scanned everything): the next full collection is thorough
again, frees the cycles and sets the new size. Frozen memory is thus at most about `factor` times
the live objects at the last thorough collection, and thorough (long) collections happen when
the heap has grown `factor`-fold instead of at every quarter's growth.

`configure(environ)` reads `KUBETRAIN_GC_FREEZE` (`off`, or the factor; default
`DEFAULT_FACTOR`) and installs the policy in this process.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)

ENV = "KUBETRAIN_GC_FREEZE"
DEFAULT_FACTOR = 4.0
MIN_BASELINE = 10_000  # objects: a thaw is never asked for below factor x this


class Collector(Protocol):
    """The part of the `gc` module the policy uses (injected in tests)."""

    def collect(self) -> int: ...

    def freeze(self) -> None: ...

    def unfreeze(self) -> None: ...

    def get_freeze_count(self) -> int: ...


@dataclass
class FreezePolicy:
    collector: Collector = field(default_factory=lambda: gc)
    factor: float = DEFAULT_FACTOR
    # Frozen objects right after the last thorough collection (None: there was none yet).
    baseline: int | None = None
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
        self.baseline = self.collector.get_freeze_count()
        self.thorough_next = False

    def after_collection(self, generation: int) -> str:
        """What to do once a collection of `generation` finished: "freeze", "thaw" or "none"."""
        if generation < 2:
            return "none"
        self.collector.freeze()
        self.freezes += 1
        frozen = self.collector.get_freeze_count()
        if self.thorough_next:
            self.thorough_next = False
            self.baseline = frozen
            return "freeze"
        assert self.baseline is not None
        if frozen > self.factor * max(self.baseline, MIN_BASELINE):
            self.collector.unfreeze()
            self.thaws += 1
            self.thorough_next = True
            return "thaw"
        return "freeze"

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            self.after_collection(int(info.get("generation", 0)))

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


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
    _installed = FreezePolicy(factor=factor)
    _installed.start()
    _installed.install()
    log.debug("garbage collector: freezing survivors of full collections (thaw at %gx)", factor)
    return _installed


__all__ = ["DEFAULT_FACTOR", "ENV", "Collector", "FreezePolicy", "GcConfigError", "configure", "factor_from"]
