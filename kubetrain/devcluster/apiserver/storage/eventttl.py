"""Event expiry: Events are deleted `ttl` seconds after their last write, as kube-apiserver's
`--event-ttl` (default 1 h) has etcd delete them.

Upstream: the event registry (k8s.io/kubernetes pkg/registry/core/event/storage/storage.go,
NewREST) sets `TTLFunc: func(runtime.Object, uint64, bool) (uint64, error) { return ttl, nil }`,
and events.k8s.io/v1 Events are served by the same storage (pkg/registry/events/rest/
storage_events.go calls eventstore.NewREST with the same TTL). genericregistry.Store's Create and
Update (k8s.io/apiserver/pkg/registry/generic/registry/store.go, calculateTTL) ask that TTLFunc on
every create and every update, patches included, so each write starts a fresh TTL — but an
update that changes nothing is not written (etcd3/store.go GuaranteedUpdate returns the stored
object, as devcluster keeps its resourceVersion), so it extends nothing. The etcd3
storage (k8s.io/apiserver/pkg/storage/etcd3/store.go, ttlOpts) attaches the key to an etcd lease of
that many seconds; a TTL of 0 attaches none, so `--event-ttl=0` keeps Events forever. When the
lease expires etcd deletes the key: no admission, no finalizers, and every watch sees DELETED with
the last stored Event (etcd3/watcher.go decodes a delete from its previous value) at a new
resourceVersion.

devcluster stores events.k8s.io/v1 Events as the core/v1 Events they are (kinds/eventsv1.py), so
a write through either group starts the one Event's TTL. Deadlines are taken from the API
server's (injectable) clock. Two differences from a
real cluster, both only ever later: etcd's lease manager (etcd3/lease_manager.go, GetLease) lets
writes within a short window share one lease lengthened by up to 5 % of the TTL (at most 60 s),
so a real Event may live that much longer; and expiry happens when `sweep()` runs — every 0.5 s
while the server runs, as etcd's lessor checks for expired leases every 500 ms.

Every Event's deadline is its last write plus the same TTL, so write order is deadline order:
`_deadlines` is kept in write order (a rewrite moves the Event to the end; a delete drops it) and
a sweep only looks at its expired front.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timedelta

from kubetrain.devcluster.apiserver.base.background import BackgroundTask, every
from kubetrain.devcluster.apiserver.storage.store import Event, Key, Store

EVENT_KEYS = frozenset({"events"})  # events.k8s.io/v1 Events are stored as these (kinds/eventsv1.py)
DEFAULT_EVENT_TTL = 3600.0  # kube-apiserver's --event-ttl default (1h)
SWEEP_SECONDS = 0.5  # etcd's lessor checks for expired leases this often


def check_ttl(ttl: float) -> float:
    if not (ttl >= 0 and math.isfinite(ttl)):
        raise ValueError(
            f"event TTL must be 0 (Events never expire) or a positive number of seconds, not {ttl}"
        )
    return float(ttl)


class EventExpiry:
    """Deletes each stored Event `ttl` seconds after its last create or update (0: never)."""

    def __init__(self, store: Store, clock: Callable[[], datetime], ttl: float = DEFAULT_EVENT_TTL) -> None:
        self.store = store
        self.clock = clock
        self.ttl = check_ttl(ttl)
        self._deadlines: OrderedDict[Key, tuple[datetime, str]] = OrderedDict()  # key -> (when, rv written)
        self._background = BackgroundTask("devcluster-event-ttl", lambda: every(SWEEP_SECONDS, self.sweep))
        self.expired = 0  # Events deleted by expiry so far
        if self.ttl > 0:
            store.listeners.append(self._observe)

    def __len__(self) -> int:
        """Events waiting to expire."""
        return len(self._deadlines)

    def _observe(self, event: Event) -> None:
        if event.rkey not in EVENT_KEYS:
            return
        meta = event.obj["metadata"]
        key = (event.rkey, meta.get("namespace", ""), meta["name"])
        self._deadlines.pop(key, None)
        if event.type != "DELETED":
            self._deadlines[key] = (self.clock() + timedelta(seconds=self.ttl), str(meta["resourceVersion"]))

    def sweep(self) -> int:
        """Delete every Event whose TTL has run out; returns how many."""
        now = self.clock()
        n = 0
        while self._deadlines:
            key, (deadline, rv) = next(iter(self._deadlines.items()))
            if deadline > now:
                break
            self._deadlines.popitem(last=False)
            obj = self.store.get(*key)
            if obj is not None and obj["metadata"].get("resourceVersion") == rv:
                self.store.remove(*key)  # listeners (this one too) see the DELETED
                n += 1
        self.expired += n
        return n

    def start(self) -> None:
        if self.ttl > 0:
            self._background.start()

    async def stop(self) -> None:
        await self._background.stop()
