"""Watch streams: `GET ...?watch=true` written as newline-delimited JSON events."""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.storage.store import Watcher, dumps
from kubetrain.devcluster.apiserver.verbs.core import ApiServer, Target
from kubetrain.devcluster.apiserver.verbs.reads import ListQuery, Reader

JSON = "application/json"
WATCH_BATCH = 256
# kube-apiserver's cacher: bookmarks every minute (defaultBookmarkFrequency, DevCluster's
# `bookmark_interval`) and one this long before a watch's deadline.
PRE_TIMEOUT_BOOKMARK = 2.0


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


async def serve(
    request: web.Request,
    api: ApiServer,
    reader: Reader,
    t: Target,
    q: ListQuery,
    bookmark_interval: float,
    streams: set[web.StreamResponse],
    convert: Callable[[list[Obj]], Awaitable[list[Obj]]] | None = None,
    view: Target | None = None,
) -> web.StreamResponse:
    """`view`: the request as the client made it, when `t` is the storage it reads (an
    events.k8s.io/v1 watch of the core Events): its bookmarks name the client's kind.

    A watch: initial events or the replay since resourceVersion, then changes, bookmarks
    when asked for (every `bookmark_interval` and 2 s before the deadline, `_next_bookmark`),
    until timeoutSeconds (default 30-60 min), the client goes away or the server stops. A too
    old resourceVersion is an ERROR event (410)."""
    bookmarks = _truthy(request.query.get("allowWatchBookmarks"))
    send_initial = request.query.get("sendInitialEvents")
    timeout = request.query.get("timeoutSeconds")
    seconds = float(timeout) if timeout else random.uniform(1800, 3600)
    store = api.store
    watcher: Watcher | None = None
    error: ApiError | None = None
    initial_end = False
    try:
        watcher, initial_end = reader.watch(t, q, None if send_initial is None else _truthy(send_initial))
    except ApiError as exc:
        if exc.code != 410:
            raise
        error = exc
    resp = web.StreamResponse(status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    if error is not None:
        await resp.write(dumps({"type": "ERROR", "object": error.status()}) + b"\n")
        await resp.write_eof()
        return resp
    assert watcher is not None
    asked = view or t
    streams.add(resp)
    deadline = time.monotonic() + seconds
    next_bookmark = _next_bookmark(time.monotonic(), bookmark_interval, deadline)
    try:
        if initial_end and bookmarks:
            await _flush(resp, api, t, watcher, len(watcher.items), convert)
            await resp.write(_bookmark(asked, store.rv, initial_end=True))
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            if not watcher.items and not watcher.closed:
                wait = min(deadline, next_bookmark if bookmarks else deadline, now + 5.0) - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watcher.wake.wait(), timeout=max(wait, 0.0))
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            await _flush(resp, api, t, watcher, WATCH_BATCH, convert)
            if watcher.closed and not watcher.items:
                break
            if bookmarks and time.monotonic() >= next_bookmark and not watcher.items:
                await resp.write(_bookmark(asked, store.rv))
                next_bookmark = _next_bookmark(time.monotonic(), bookmark_interval, deadline)
        await resp.write_eof()
    except (ConnectionResetError, asyncio.CancelledError, RuntimeError):
        pass
    finally:
        store.unwatch(watcher)
        streams.discard(resp)
    return resp


async def _flush(
    resp: web.StreamResponse,
    api: ApiServer,
    t: Target,
    watcher: Watcher,
    limit: int,
    convert: Callable[[list[Obj]], Awaitable[list[Obj]]] | None = None,
) -> None:
    items = watcher.take(limit)
    if items and convert is not None:  # a converted version: one conversion per batch
        objs = await convert([obj for _, obj in items])
        events = zip(items, objs, strict=True)
        await resp.write(b"".join(dumps({"type": k, "object": o}) + b"\n" for (k, _), o in events))
    elif items:
        await resp.write(b"".join(_line(api, t, item) for item in items))


def _line(api: ApiServer, t: Target, item: tuple[str, Obj]) -> bytes:
    kind, obj = item
    return api.store.event_lines.line(
        kind, obj, t.api_version, t.rt.kind, lambda: dumps({"type": kind, "object": api.out(t, obj)}) + b"\n"
    )


def _next_bookmark(now: float, interval: float, deadline: float) -> float:
    """When the next bookmark is due, as kube-apiserver's cacheWatcher.nextBookmarkTime: every
    `interval` (its bookmarkFrequency, a minute), and once 2 s before the watch's deadline, so
    a client resumes a timed-out watch from a current resourceVersion. None left past that:
    infinity."""
    due = now + interval
    before_deadline = deadline - PRE_TIMEOUT_BOOKMARK
    if before_deadline < due:
        due = before_deadline
    return due if due >= now else math.inf


def _bookmark(t: Target, rv: int, initial_end: bool = False) -> bytes:
    md: dict[str, Any] = {"resourceVersion": str(rv), "creationTimestamp": None}
    if initial_end:
        md["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": t.rt.kind, "apiVersion": t.api_version, "metadata": md}
    return dumps({"type": "BOOKMARK", "object": obj}) + b"\n"
