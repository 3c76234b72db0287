"""Watch event lines encoded once for every watcher that is sent them.

kube-apiserver's watch cache wraps each event's object in a `cachingObject` that serialises it
once per encoding and hands the same bytes to every watcher asking for that encoding, so N
watchers of pods cost one encoding per event, not N. devcluster does the same: `EventLines.line`
encodes an event's line (`{"type":…,"object":…}\\n`) once per (object, resourceVersion, type,
served apiVersion and kind) and returns the cached bytes to the next watcher. Stored objects are
never changed in place without a new resourceVersion, and the cache holds a reference to each
object it keyed by identity, so a cached line is never served for another object.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from kubetrain.devcluster.apiserver.base.types import Obj

DEFAULT_SIZE = 4096  # lines kept; more than any watcher's pending batch (watchstream.WATCH_BATCH)


class EventLines:
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._lines: OrderedDict[tuple[int, str, str, str, str], tuple[Obj, bytes]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def line(
        self, kind: str, obj: Obj, api_version: str, served_kind: str, encode: Callable[[], bytes]
    ) -> bytes:
        """The line of event `kind` of `obj` served as `api_version`/`served_kind`; `encode`
        makes it when no watcher was sent it yet."""
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        key = (id(obj), rv, kind, api_version, served_kind)
        cached = self._lines.get(key)
        if cached is not None and cached[0] is obj:
            self.hits += 1
            return cached[1]
        self.misses += 1
        data = encode()
        self._lines[key] = (obj, data)
        if len(self._lines) > self.size:
            self._lines.popitem(last=False)
        return data
