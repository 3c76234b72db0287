"""LIST and WATCH: selectors, resourceVersion semantics, pagination with continue tokens.

Lists read at the current version, or with `resourceVersionMatch=Exact` (or a `limit` and a
resourceVersion but no match) at any version not yet compacted: the store rebuilds the state at
that version from its event history (`Store.items_at`), as etcd serves a range read at any
revision it still holds (etcd3 store.go GetList reads `WithRev(withRev)`). A version older than
the store can rebuild is 410 Expired with etcd3/errors.go's "The resourceVersion for the provided
list is too old."

Pagination: a `limit`ed list's continue token names its resourceVersion and the last key returned,
and every later page reads from that same version, as etcd serves later pages at the first page's
revision — until that version is compacted (compaction.py; `FaultInjector.expire_resource_versions()`)
or, in devcluster, falls out of the history's count cap (store.py). Then the 410 is
handleCompactedErrorForPaging's: the "inconsistent continue" message and, in the Status's
`metadata.continue`, a token with resourceVersion -1 that lists on from the same key at the
current version (storage.EncodeContinue(key, prefix, -1); etcd3 store.go GetList reads a negative
continue revision at the latest). As an optimisation only, the sorted result of each of the 64
most recent paginated lists is kept (references to the immutable stored objects) so its next pages
need no rebuilding; a token whose result is no longer kept is served by rebuilding the state at its
version.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import eventsv1
from kubetrain.devcluster.apiserver.kinds.resources import all_field_selectors
from kubetrain.devcluster.apiserver.request.selectors import (
    Predicate,
    exact_name,
    parse_field_selector,
    parse_label_selector,
)
from kubetrain.devcluster.apiserver.storage.store import Watcher
from kubetrain.devcluster.apiserver.verbs.core import ApiServer, Target

SNAPSHOT_CACHE = 64
SnapshotKey = tuple[str, str | None, int]  # (resource key, namespace or None for all, resourceVersion)
Snapshot = tuple[SnapshotKey, list[tuple[str, str]], list[Obj]]  # its key, sorted keys, objects
LATEST = -1  # the resourceVersion of a continue token that lists on at the current version


@dataclass
class ListQuery:
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


EVENTS_KEY = "events"  # the one Event resource's storage (core/v1; events.k8s.io/v1 is a view)


def predicate(t: Target, q: ListQuery) -> Predicate:
    labels = parse_label_selector(q.label_selector)
    derived = eventsv1.DERIVED_FIELDS if t.rt.key == EVENTS_KEY else None
    fields = parse_field_selector(q.field_selector, all_field_selectors(t.rt), t.rt.kind, derived)
    return lambda o: labels(o) and fields(o)


def _sort_key(obj: Obj) -> tuple[str, str]:
    md = obj["metadata"]
    return (md.get("namespace", ""), md["name"])


def _encode_token(rv: int, snap: int, start: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "s": snap, "start": "/".join(start) + "\x00"})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, int, tuple[str, str]]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        ns, _, name = raw["start"].rstrip("\x00").partition("/")
        return int(raw["rv"]), int(raw["s"]), (ns, name)
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise errors.bad_request(f"continue key is not valid: {token!r}") from None


class Reader:
    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self._snapshots: OrderedDict[int, Snapshot] = OrderedDict()
        self._next_snapshot = 0

    def _check_rv(self, q: ListQuery) -> int | None:
        """The version an Exact list reads at (None: the current one). A `limit`ed list at a
        resourceVersion other than 0 without resourceVersionMatch is Exact too, the "legacy exact
        match" of k8s.io/apiserver storage/cacher/delegator ShouldDelegateList."""
        store = self.api.store
        if q.resource_version in ("", "0"):
            return None
        try:
            rv = int(q.resource_version)
        except ValueError:
            raise errors.bad_request(f"invalid resource version: {q.resource_version}") from None
        if rv > store.rv:  # Exact too: served by the watch cache since snapshots (cacher.go
            # shouldDelegateExactRV), whose watch_cache.go waitUntilFreshAndBlock answers a
            # future version with a 504 and retry after 1 s (etcd's ErrFutureRev would say 0).
            raise errors.too_large(rv, store.rv)
        exact = q.resource_version_match == "Exact" or (not q.resource_version_match and q.limit > 0)
        if exact and rv != store.rv:
            if rv < store.oldest_readable():  # etcd3 interpretListError on ErrCompacted
                raise errors.gone(errors.LIST_EXPIRED)
            return rv
        return None

    def list_page(self, t: Target, q: ListQuery) -> Obj:
        store = self.api.store
        if q.continue_token:
            rv, snap_id, start = _decode_token(q.continue_token)
            if rv == LATEST:  # an inconsistent continue: on from `start` at the current version
                return self._first_page(t, q, start, None)
            ns = self._namespace(t)
            snapshot = self._snapshots.get(snap_id)
            if snapshot is not None and snapshot[0] == (t.rt.key, ns, rv) and rv >= store.expired_before:
                _, keys, objs = snapshot
                begin = bisect.bisect_right(keys, start)
                return self._page(t, q, keys, objs, begin, rv, snap_id)
            self._snapshots.pop(snap_id, None)
            if rv > store.rv:  # etcd3 store.go listReadError on ErrFutureRev
                raise errors.too_large(rv, store.rv)
            if rv < store.oldest_readable():
                raise errors.continue_expired(_encode_token(LATEST, 0, start))
            return self._first_page(t, q, start, rv)
        return self._first_page(t, q, None, self._check_rv(q))

    def _namespace(self, t: Target) -> str | None:
        return t.namespace if t.rt.namespaced and t.namespace else None

    def _first_page(self, t: Target, q: ListQuery, after: tuple[str, str] | None, at: int | None) -> Obj:
        """A list of the objects after key `after` (None: all of them) at version `at` (None: the
        current version; otherwise one `Store.oldest_readable()` allows)."""
        store = self.api.store
        ns = self._namespace(t)
        pred = predicate(t, q)
        rv = store.rv if at is None else at
        name = exact_name(q.field_selector)
        if at is not None:
            candidates = store.items_at(t.rt.key, ns, at)
        elif name is not None:
            if ns is not None:
                one = store.get(t.rt.key, ns, name)
                candidates = [one] if one is not None else []
            else:
                candidates = [o for o in store.items(t.rt.key) if o["metadata"]["name"] == name]
        else:
            candidates = list(store.items(t.rt.key, ns))
        objs = [o for o in candidates if pred(o) and (after is None or _sort_key(o) > after)]
        objs.sort(key=_sort_key)
        if q.limit <= 0 or len(objs) <= q.limit:
            return self._list_obj(t, objs, rv, "", None)
        keys = [_sort_key(o) for o in objs]
        snap_id = self._next_snapshot
        self._next_snapshot += 1
        self._snapshots[snap_id] = ((t.rt.key, ns, rv), keys, objs)
        while len(self._snapshots) > SNAPSHOT_CACHE:
            self._snapshots.popitem(last=False)
        return self._page(t, q, keys, objs, 0, rv, snap_id)

    def _page(
        self,
        t: Target,
        q: ListQuery,
        keys: list[tuple[str, str]],
        objs: list[Obj],
        begin: int,
        rv: int,
        snap_id: int,
    ) -> Obj:
        end = begin + q.limit if q.limit > 0 else len(objs)
        page = objs[begin:end]
        if end >= len(objs):
            self._snapshots.pop(snap_id, None)
            return self._list_obj(t, page, rv, "", None)
        token = _encode_token(rv, snap_id, keys[end - 1])
        remaining = len(objs) - end if not q.label_selector and not q.field_selector else None
        return self._list_obj(t, page, rv, token, remaining)

    def _list_obj(self, t: Target, objs: list[Obj], rv: int, token: str, remaining: int | None) -> Obj:
        md: dict[str, Any] = {"resourceVersion": str(rv)}
        if token:
            md["continue"] = token
            if remaining is not None:
                md["remainingItemCount"] = remaining
        return {
            "kind": t.rt.list_kind,
            "apiVersion": t.api_version,
            "metadata": md,
            "items": [self.api.out(t, o) for o in objs],
        }

    def watch(self, t: Target, q: ListQuery, send_initial_events: bool | None) -> tuple[Watcher, bool]:
        """Open a watch. Returns the watcher and whether an initial-events-end bookmark is due.
        Raises ApiError 410 when the requested version is older than the history window."""
        store = self.api.store
        ns = t.namespace if t.rt.namespaced and t.namespace else None
        pred = predicate(t, q)
        rv_text = q.resource_version
        explicit = send_initial_events is True
        if send_initial_events is None:
            send_initial_events = rv_text in ("", "0")
        since: int | None = None
        if rv_text not in ("", "0"):
            try:
                since = int(rv_text)
            except ValueError:
                raise errors.bad_request(f"invalid resource version: {rv_text}") from None
            if since > store.rv:
                raise errors.too_large(since, store.rv)
        initial: list[Obj] | None = None
        if send_initial_events:
            if since is not None:
                store.check_not_too_old(since)
            initial = sorted((o for o in store.items(t.rt.key, ns) if pred(o)), key=_sort_key)
            since = None
        watcher = store.watch(t.rt.key, ns, pred, since, initial)
        return watcher, explicit
