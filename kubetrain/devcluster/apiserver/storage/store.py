"""The object store: every object of every resource, one resourceVersion counter, watch fan-out.

Stored objects are never mutated: a write stores a new dict, so readers may hand out (and
serialise) stored dicts without copying. Every write takes the next resourceVersion and records
exactly one event, so the history holds consecutive versions and a watch from version X replays
`history[X+1-first:]`.

Two horizons, as in kube-apiserver (compaction.py has the upstream code they follow):
- `compacted`: the newest version a watch can no longer resume *before*: a watch from X < compacted
  gets 410 "too old resource version: X (compacted)", as from the watch cache
  (cacher/watch_cache_history.go GetIntervalLocked). It moves when the history's count cap
  (`watch_window`, a memory bound like the watch cache's capacity) evicts an event, and when
  `compact()` drops events.
- `expired_before`: etcd's compacted revision. `compact(R)` (what etcd's Compact(R) does, on the
  compactor's timer) makes every version below R unreadable: continue tokens and Exact lists of
  such versions get 410 as from etcd3/errors.go; the events before R leave the history.

Reads at an older version (etcd's MVCC range read at a revision, which serves Exact lists and
continue tokens): `items_at(rkey, ns, V)` rebuilds the state at V from the current state by
undoing, newest first, every event after V (each event keeps the object it replaced). That needs
every event after V, so the oldest readable version (`oldest_readable()`) is the later of etcd's
compacted revision and the version just before the history's first event: when the count cap has
dropped events that compaction has not, the versions before them are unreadable as if compacted
(etcd answers ErrCompacted for any revision whose history it no longer holds, and a state rebuilt
without those events would be wrong).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.storage.eventlines import EventLines

Key = tuple[str, str, str]  # (resource key, namespace, name)
Predicate = Callable[[Obj], bool]

WATCH_QUEUE_LIMIT = 20000  # a watcher this far behind is closed, as kube-apiserver closes slow watchers


@dataclass(slots=True)
class Event:
    rv: int
    rkey: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj
    prev: Obj | None


@dataclass(eq=False)
class Watcher:
    """One watch: pending (type, object) items and a wake-up event for the stream writer.

    (A deque plus an Event rather than an asyncio.Queue read with wait_for: on Python 3.11 a
    wait_for timeout racing a completed get() can drop the item.)"""

    rkey: str
    namespace: str | None
    predicate: Predicate
    items: deque[tuple[str, Obj]] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    def offer(self, event: Event) -> None:
        obj = event.obj
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return
        now = self.predicate(obj)
        if event.type == "MODIFIED":
            before = event.prev is not None and self.predicate(event.prev)
            if now and before:
                kind = "MODIFIED"
            elif now:
                kind = "ADDED"
            elif before:
                kind = "DELETED"
            else:
                return
        elif not now:
            return
        else:
            kind = event.type
        self.put((kind, obj))

    def put(self, item: tuple[str, Obj]) -> None:
        if self.closed:
            return
        if len(self.items) >= WATCH_QUEUE_LIMIT:
            self.close()
            return
        self.items.append(item)
        self.wake.set()

    def take(self, limit: int) -> list[tuple[str, Obj]]:
        out: list[tuple[str, Obj]] = []
        while self.items and len(out) < limit:
            out.append(self.items.popleft())
        if not self.items:
            self.wake.clear()
        return out

    def close(self) -> None:
        """Stop delivering; the stream ends once the items already queued are written."""
        self.closed = True
        self.wake.set()


class Store:
    def __init__(self, watch_window: int = 1000) -> None:
        self.rv = 1
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._by_uid: dict[str, Key] = {}
        self._dependents: dict[str, set[Key]] = {}
        self._history: deque[Event] = deque(maxlen=max(1, watch_window))
        self.compacted = 1  # a watch from a version below this (other than "now") is too old
        self.expired_before = 0  # etcd's compacted revision: versions below it are unreadable
        self._watchers: dict[str, set[Watcher]] = {}
        self.listeners: list[Callable[[Event], None]] = []
        self.event_lines = EventLines()  # each watch event encoded once for all its watchers

    # ---- reads -------------------------------------------------------------------------------
    def get(self, rkey: str, namespace: str, name: str) -> Obj | None:
        return self._objects.get(rkey, {}).get(namespace, {}).get(name)

    def by_uid(self, uid: str) -> tuple[Key, Obj] | None:
        key = self._by_uid.get(uid)
        if key is None:
            return None
        obj = self.get(*key)
        return (key, obj) if obj is not None else None

    def items(self, rkey: str, namespace: str | None = None) -> Iterator[Obj]:
        by_ns = self._objects.get(rkey, {})
        if namespace is not None:
            yield from by_ns.get(namespace, {}).values()
            return
        for objs in by_ns.values():
            yield from objs.values()

    def count(self, rkey: str, namespace: str | None = None) -> int:
        by_ns = self._objects.get(rkey, {})
        if namespace is not None:
            return len(by_ns.get(namespace, {}))
        return sum(len(v) for v in by_ns.values())

    def resource_keys(self) -> list[str]:
        return list(self._objects)

    def oldest_readable(self) -> int:
        """The oldest version `items_at` can rebuild: not compacted, and every event after it kept."""
        first = self._history[0].rv - 1 if self._history else self.rv
        return max(self.expired_before, first)

    def items_at(self, rkey: str, namespace: str | None, rv: int) -> list[Obj]:
        """The objects of a resource (in `namespace`, or all) as they were at version `rv`, unordered.
        Raises LookupError when `rv` is older than `oldest_readable()` or newer than the store."""
        if not self.oldest_readable() <= rv <= self.rv:
            raise LookupError(rv)
        state = {
            (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for o in self.items(rkey, namespace)
        }
        for event in reversed(self._history):  # newest first; stops at the first event at or before rv
            if event.rv <= rv:
                break
            if event.rkey != rkey:
                continue
            meta = event.obj["metadata"]
            ns = meta.get("namespace", "")
            if namespace is not None and ns != namespace:
                continue
            if event.prev is None:  # ADDED after rv: not there yet
                state.pop((ns, meta["name"]), None)
            else:  # MODIFIED or DELETED after rv: the object it replaced is the one at rv
                state[(ns, meta["name"])] = event.prev
        return list(state.values())

    def dependents(self, owner_uid: str) -> list[tuple[Key, Obj]]:
        out = []
        for key in self._dependents.get(owner_uid, ()):
            obj = self.get(*key)
            if obj is not None:
                out.append((key, obj))
        return out

    # ---- writes ------------------------------------------------------------------------------
    def create(self, rkey: str, obj: Obj) -> Obj:
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        bucket = self._objects.setdefault(rkey, {}).setdefault(ns, {})
        if name in bucket:
            raise KeyError(name)
        rv = self._next()
        meta["resourceVersion"] = str(rv)
        bucket[name] = obj
        self._index(rkey, obj, None)
        self._emit(Event(rv, rkey, "ADDED", obj, None))
        return obj

    def update(self, rkey: str, obj: Obj, expected_rv: str | None) -> Obj:
        """Replace an object; `expected_rv` (when given) must be the stored version, else KeyError/
        ValueError. Raises LookupError when the object does not exist."""
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        bucket = self._objects.get(rkey, {}).get(ns, {})
        old = bucket.get(name)
        if old is None:
            raise LookupError(name)
        if expected_rv and old["metadata"]["resourceVersion"] != expected_rv:
            raise ValueError(name)
        rv = self._next()
        meta["resourceVersion"] = str(rv)
        bucket[name] = obj
        self._index(rkey, obj, old)
        self._emit(Event(rv, rkey, "MODIFIED", obj, old))
        return obj

    def remove(self, rkey: str, namespace: str, name: str, expected_rv: str | None = None) -> Obj:
        bucket = self._objects.get(rkey, {}).get(namespace, {})
        old = bucket.get(name)
        if old is None:
            raise LookupError(name)
        if expected_rv and old["metadata"]["resourceVersion"] != expected_rv:
            raise ValueError(name)
        del bucket[name]
        if not bucket:
            del self._objects[rkey][namespace]
        self._index(rkey, None, old)
        rv = self._next()
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        self._emit(Event(rv, rkey, "DELETED", gone, old))
        return gone

    def drop_resource(self, rkey: str) -> None:
        """Forget every object of a resource (its CRD was deleted), emitting DELETED events."""
        for obj in list(self.items(rkey)):
            meta = obj["metadata"]
            self.remove(rkey, meta.get("namespace", ""), meta["name"])
        for watcher in list(self._watchers.pop(rkey, ())):
            watcher.close()

    def _next(self) -> int:
        self.rv += 1
        return self.rv

    def _index(self, rkey: str, new: Obj | None, old: Obj | None) -> None:
        ref = new if new is not None else old
        assert ref is not None
        meta = ref["metadata"]
        key = (rkey, meta.get("namespace", ""), meta["name"])
        if old is not None:
            for owner in old["metadata"].get("ownerReferences") or ():
                deps = self._dependents.get(owner.get("uid", ""))
                if deps is not None:
                    deps.discard(key)
                    if not deps:
                        del self._dependents[owner.get("uid", "")]
            if new is None:
                self._by_uid.pop(old["metadata"].get("uid", ""), None)
        if new is not None:
            self._by_uid[new["metadata"]["uid"]] = key
            for owner in new["metadata"].get("ownerReferences") or ():
                self._dependents.setdefault(owner.get("uid", ""), set()).add(key)

    def _emit(self, event: Event) -> None:
        if len(self._history) == self._history.maxlen:
            self.compacted = self._history[0].rv
        self._history.append(event)
        for watcher in list(self._watchers.get(event.rkey, ())):
            watcher.offer(event)
        for listener in self.listeners:
            listener(event)

    # ---- versions ----------------------------------------------------------------------------
    def check_not_too_old(self, rv: int) -> None:
        if rv < self.compacted and rv != self.rv:
            raise errors.too_old(rv, self.compacted)

    def compact(self, revision: int) -> int:
        """Compact to `revision`, as etcd's Compact(revision): versions below it become too old for
        continue tokens, Exact lists and watches (a watch from revision-1 still resumes: it needs
        only the events from `revision` on), and their events leave the history. Never moves back;
        returns how many events were dropped."""
        revision = min(revision, self.rv)
        if revision <= self.expired_before:
            return 0
        self.expired_before = revision
        self.compacted = max(self.compacted, revision - 1)
        dropped = 0
        while self._history and self._history[0].rv < revision:
            self._history.popleft()
            dropped += 1
        return dropped

    def history_len(self) -> int:
        return len(self._history)

    def expire(self) -> None:
        """Compact everything: every version before now becomes too old (fault injection)."""
        self.compacted = self.rv
        self.expired_before = self.rv
        self._history.clear()

    # ---- watches -----------------------------------------------------------------------------
    def watch(
        self,
        rkey: str,
        namespace: str | None,
        predicate: Predicate,
        since: int | None,
        initial: list[Obj] | None = None,
    ) -> Watcher:
        """Register a watcher. With `since`, replay the history after it (raises 410 Gone when the
        window no longer covers it); with `initial`, first deliver those objects as ADDED."""
        if since is not None:
            self.check_not_too_old(since)
        watcher = Watcher(rkey, namespace, predicate)
        if initial is not None:
            for obj in initial:
                watcher.put(("ADDED", obj))
        if since is not None and self._history:
            start = max(0, since + 1 - self._history[0].rv)
            for i in range(start, len(self._history)):
                event = self._history[i]
                if event.rkey == rkey:
                    watcher.offer(event)
        self._watchers.setdefault(rkey, set()).add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.get(watcher.rkey, set()).discard(watcher)

    def close_watches(self) -> int:
        n = 0
        for watchers in self._watchers.values():
            for watcher in list(watchers):
                watcher.close()
                n += 1
            watchers.clear()
        return n

    def watcher_count(self) -> int:
        return sum(len(w) for w in self._watchers.values())


def dumps(obj: Any) -> bytes:
    """A response body. orjson (non-ASCII as UTF-8, as Go's encoding/json writes it) for speed:
    a list of pods with their managedFields is several hundred KB; the standard library's
    encoder for what orjson refuses (integers beyond 64 bits, non-string keys)."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        return json.dumps(obj, separators=(",", ":")).encode()
