"""History compaction on a timer, as kube-apiserver compacts etcd (`--etcd-compaction-interval`).

Upstream (k8s.io/apiserver pkg/storage/etcd3/compact.go): `runCompactLoop` waits one interval
(default 5 min), then calls `Compact(ctx, client, compactTime, rev)` with the revision `rev` it
recorded at the previous tick — 0 on the first tick, and "we don't compact on bootstrap" — and
records the current revision for the next one. So each tick compacts to the revision of one
interval earlier, and etcd keeps history for between one and two intervals; an interval of 0
starts no loop and history is never compacted by time. After etcd's Compact(R) every revision
below R is gone, which the API server reports as 410 Gone (apimachinery errors.NewResourceExpired:
status Failure, reason Expired, code 410) with storage/etcd3/errors.go's messages:
- a list at an exact older resourceVersion: "The resourceVersion for the provided list is too old."
- a continue token of an older revision (interpretListError / handleCompactedErrorForPaging):
  the "inconsistent continue" message, with a new continue token in the Status's
  `metadata.continue` that resumes from the same key at the latest revision (resourceVersion -1
  in the token), so a client may accept an inconsistent list rather than start again;
- a watch from an older version: watches are served by the watch cache, whose own window
  (cacher/watch_cache_history.go GetIntervalLocked) answers "too old resource version: X (Y)"
  with Y the newest version it can no longer resume after. devcluster has one history for
  both: it is compacted with etcd, and its count cap (`watch_window`) bounds it as the watch
  cache's capacity does. A real watch cache is not emptied by etcd's compaction, so it may still
  resume a watch that devcluster refuses; a client must relist on 410 either way, and
  devcluster's refusal is the one etcd itself gives (interpretWatchError, for watches the
  cache does not serve), its message the watch cache's.

Differences, each moving compaction later by at most the poll period: compaction happens when
`poll()` runs — once a second while the server runs — and
devcluster has a single API server, so none of compact.go's compare-and-swap between API
servers (which may stretch an interval to two on failover). The compactor's own write of
`compact_rev_key` takes an etcd revision upstream; devcluster's resourceVersions count only
object writes. Time is the API server's injected clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta

from kubetrain.devcluster.apiserver.base.background import BackgroundTask, every
from kubetrain.devcluster.apiserver.storage.store import Store

DEFAULT_COMPACTION_INTERVAL = 300.0  # kube-apiserver's --etcd-compaction-interval default (5m)
POLL_SECONDS = 1.0


def check_interval(interval: float) -> float:
    if not (interval >= 0 and math.isfinite(interval)):
        raise ValueError(
            "compaction interval must be 0 (history is never compacted by time) or a positive "
            f"number of seconds, not {interval}"
        )
    return float(interval)


class Compactor:
    """Every `interval` seconds, compacts the store to the resourceVersion recorded one interval
    earlier (0: never)."""

    def __init__(self, store: Store, clock: Callable[[], datetime], interval: float) -> None:
        self.store = store
        self.clock = clock
        self.interval = check_interval(interval)
        self.recorded = 0  # the revision recorded at the last tick (0: none yet, as upstream)
        self.due = clock() + timedelta(seconds=self.interval)  # the first tick: one interval in
        self.compactions = 0  # ticks that compacted something
        self._background = BackgroundTask(
            "devcluster-compaction", lambda: every(min(POLL_SECONDS, self.interval), self.poll)
        )

    def poll(self) -> int:
        """Run the tick if it is due; returns the revision compacted to (0: none)."""
        if self.interval <= 0:
            return 0
        now = self.clock()
        if now < self.due:
            return 0
        revision = self.recorded
        if revision:
            self.store.compact(revision)
            self.compactions += 1
        self.recorded = self.store.rv
        self.due = now + timedelta(seconds=self.interval)
        return revision

    def start(self) -> None:
        if self.interval > 0:
            self._background.start()

    async def stop(self) -> None:
        await self._background.stop()
