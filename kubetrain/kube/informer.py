"""Informer: list + watch one resource into a shared `Store`, and tell handlers what changed.

    cache = Cache()
    pods = Informer(client, PODS, cache=cache, namespaces=["team-a"])   # None: all namespaces
    pods.add_handler(on_add=lambda pod: ..., on_update=lambda old, new: ..., on_delete=lambda pod: ...)
    pods.start()                       # background task(s); or `await pods.run()`
    await pods.wait_synced()           # the initial list is in the cache (pods.has_synced)
    ...
    await pods.stop()

Per namespace (or once for all namespaces) it runs client-go's reflector loop:
- paginated LIST (`page_size`), replace the store's content, then WATCH from the list's
  resourceVersion with bookmarks;
- when a watch ends (server timeout, closed connection, error) it re-watches from the last
  resourceVersion it saw (bookmarks keep it fresh) — no LIST;
- only 410 Gone (the resourceVersion expired) triggers a new LIST; the relist diffs against the
  store and raises add/update/delete for whatever changed meanwhile, so no update is lost;
- a stream silent for `read_timeout` seconds (default: watch timeout + 30 s) is abandoned and
  re-watched; failures back off exponentially (`backoff_base` doubling up to `backoff_cap`).
After the initial sync an informer makes zero LIST calls unless a 410 forces a relist
(`informer.lists` counts them).

Handlers are plain callables, run synchronously in the informer task in event order, and must
not block (typically they enqueue a work-queue key). A failing handler is logged, never fatal.
`on_forbidden`: a 403 on a LIST or WATCH is passed to it and that namespace's loop ends (no
retries; the informer then never syncs, and `refused` is set) — for an optional watch the caller
may lack RBAC for. `wait_ready()` waits until the informer has synced or was refused: what a
caller starting many informers, some optional, waits for.
Objects are stored as received (not copied; `metadata.managedFields` is dropped to save
memory); list items get `apiVersion`/`kind` filled in like watch objects. `transform` (like
client-go's `SetTransform`) may slim each object further before it is stored and handed to the
handlers — e.g. `kubetrain.kube.cache.slim_pod`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Sequence
from typing import Any

from kubetrain.kube.cache import Cache, Store
from kubetrain.kube.client import ApiError, GoneError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.resources import ResourceRef

log = logging.getLogger(__name__)

Obj = dict[str, Any]
AddHandler = Callable[[Obj], None]
UpdateHandler = Callable[[Obj, Obj], None]
DeleteHandler = Callable[[Obj], None]

DEFAULT_WATCH_TIMEOUT = 300


class Informer:
    def __init__(
        self,
        client: KubeClient,
        ref: ResourceRef,
        *,
        cache: Cache | None = None,
        store: Store | None = None,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        watch_timeout: int = DEFAULT_WATCH_TIMEOUT,
        read_timeout: float | None = None,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        clock: Clock | None = None,
        on_forbidden: Callable[[ApiError], None] | None = None,
        transform: Callable[[Obj], Obj] | None = None,
    ) -> None:
        """`watch_timeout`: server-side timeoutSeconds of each watch, randomised up to 2x like
        client-go so many informers do not reconnect in lock-step. `read_timeout`: client-side
        silence limit (default: that watch's timeout + 30 s, longer than any healthy stream).
        `namespaces`: for a namespaced resource, one list/watch per namespace feeding one store
        (None: a single cluster-wide list/watch)."""
        self.client = client
        self.ref = ref
        if store is None:
            store = cache.store(ref) if cache is not None else Store(ref)
        self.store = store
        self.namespaces: list[str | None] = list(namespaces) if namespaces and ref.namespaced else [None]
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.read_timeout = read_timeout
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self._clock = clock or SYSTEM_CLOCK
        self.on_forbidden = on_forbidden
        self.transform = transform
        self._add: list[AddHandler] = []
        self._update: list[UpdateHandler] = []
        self._delete: list[DeleteHandler] = []
        self._synced: set[str | None] = set()
        self._synced_event = asyncio.Event()
        self._refused_event = asyncio.Event()  # a 403 passed to on_forbidden
        self._tasks: list[asyncio.Task[None]] = []
        self.resource_versions: dict[str | None, str] = {}
        self.lists = 0  # LIST rounds (initial + relists), for tests and budgets
        self.watches = 0  # WATCH requests started

    # --- handlers ---------------------------------------------------------------------------------
    def add_handler(
        self,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
    ) -> None:
        if on_add:
            self._add.append(on_add)
        if on_update:
            self._update.append(on_update)
        if on_delete:
            self._delete.append(on_delete)

    # --- lifecycle --------------------------------------------------------------------------------
    @property
    def has_synced(self) -> bool:
        """True once the initial list of every namespace is in the store."""
        return self._synced_event.is_set()

    async def wait_synced(self) -> None:
        """Wait for `has_synced` (wrap in `asyncio.timeout(...)` to bound the wait)."""
        await self._synced_event.wait()

    @property
    def refused(self) -> bool:
        """True once a 403 was passed to `on_forbidden` (that namespace's loop ended)."""
        return self._refused_event.is_set()

    async def wait_ready(self) -> None:
        """Wait until the informer has synced or, with `on_forbidden`, was refused."""
        synced = asyncio.ensure_future(self._synced_event.wait())
        refused = asyncio.ensure_future(self._refused_event.wait())
        try:
            await asyncio.wait((synced, refused), return_when=asyncio.FIRST_COMPLETED)
        finally:
            synced.cancel()
            refused.cancel()

    def start(self) -> None:
        """Run in background tasks (idempotent)."""
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._run_namespace(ns), name=f"informer {self.ref.plural} {ns or '*'}")
            for ns in self.namespaces
        ]

    async def run(self) -> None:
        """Run until cancelled."""
        self.start()
        try:
            await asyncio.gather(*self._tasks)
        finally:
            await self.stop()

    def cancel(self) -> None:
        """Cancel the background tasks at once: no store update or handler runs after this call
        returns. `await stop()` then waits for them to end."""
        for task in self._tasks:
            task.cancel()

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- the reflector loop -------------------------------------------------------------------------
    async def _run_namespace(self, namespace: str | None) -> None:
        rv: str | None = None
        failures = 0
        while True:
            try:
                if rv is None:
                    rv = await self._list(namespace)
                    self.resource_versions[namespace] = rv
                    self._mark_synced(namespace)
                    failures = 0
                started = self._clock.monotonic()
                delivered, rv = await self._watch(namespace, rv)
                self.resource_versions[namespace] = rv
                if delivered or self._clock.monotonic() - started >= 1.0:
                    failures = 0
                else:
                    # an empty stream that ended at once: re-watch, but don't hammer the server
                    failures += 1
                    if failures > 1:
                        await self._clock.sleep(self._delay(failures - 1))
            except GoneError:
                log.info("%s %s: resourceVersion %s expired, relisting", self.ref, namespace or "*", rv)
                rv = None
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                if err.status == 403 and self.on_forbidden is not None:
                    self._refused_event.set()
                    self.on_forbidden(err)
                    return
                failures += 1
                delay = self._delay(failures)
                log.warning("%s %s: %s; retrying in %.1f s", self.ref, namespace or "*", err, delay)
                await self._clock.sleep(delay)
            except Exception:
                failures += 1
                delay = self._delay(failures)
                log.exception(
                    "%s %s: unexpected informer failure; retrying in %.1f s", self.ref, namespace, delay
                )
                await self._clock.sleep(delay)

    def _delay(self, failures: int) -> float:
        base: float = min(self.backoff_cap, self.backoff_base * 2 ** min(failures - 1, 30))
        return base * (0.5 + random.random() / 2)

    async def _list(self, namespace: str | None) -> str:
        self.lists += 1
        items, rv = await self.client.list_all(
            self.ref,
            namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
        )
        self._replace(namespace, items)
        return rv

    async def _watch(self, namespace: str | None, rv: str) -> tuple[bool, str]:
        """One watch; returns (whether it delivered any event, the last resourceVersion)."""
        self.watches += 1
        delivered = False
        timeout = int(self.watch_timeout * (1 + random.random()))
        events = self.client.watch(
            self.ref,
            namespace,
            resource_version=rv,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_bookmarks=True,
            timeout_seconds=timeout,
            read_timeout=self.read_timeout if self.read_timeout is not None else timeout + 30.0,
        )
        async with contextlib.aclosing(events):
            async for event_type, obj in events:
                delivered = True
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if event_type == "BOOKMARK":
                    pass
                elif event_type in ("ADDED", "MODIFIED"):
                    self._on_upsert(obj)
                elif event_type == "DELETED":
                    self._on_delete(obj)
                else:
                    log.warning("%s: ignoring watch event of unknown type %r", self.ref, event_type)
                    continue
                if new_rv:
                    rv = new_rv
                    self.resource_versions[namespace] = rv
        return delivered, rv

    # --- store updates + handlers -------------------------------------------------------------------
    def _prepare(self, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", self.ref.api_version)
        obj.setdefault("kind", self.ref.kind)
        meta = obj.get("metadata")
        if meta and "managedFields" in meta:
            del meta["managedFields"]
        return obj if self.transform is None else self.transform(obj)

    def _on_upsert(self, obj: Obj) -> None:
        obj = self._prepare(obj)
        old = self.store.upsert(obj)
        if old is None:
            self._call_add(obj)
        else:
            self._call_update(old, obj)

    def _on_delete(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        old = self.store.remove(meta.get("namespace"), meta.get("name", ""))
        self._call_delete(self._prepare(obj) if old is None else obj)

    def _replace(self, namespace: str | None, items: list[Obj]) -> None:
        """Make the store's content for `namespace` equal `items`, raising the differences."""
        seen: set[tuple[str, str]] = set()
        for obj in map(self._prepare, items):
            meta = obj.get("metadata") or {}
            seen.add((meta.get("namespace") or "", meta.get("name") or ""))
            old = self.store.upsert(obj)
            if old is None:
                self._call_add(obj)
            elif (old.get("metadata") or {}).get("resourceVersion") != meta.get("resourceVersion"):
                self._call_update(old, obj)
        for obj in self.store.list(namespace):
            meta = obj.get("metadata") or {}
            if (meta.get("namespace") or "", meta.get("name") or "") not in seen:
                self.store.remove(meta.get("namespace"), meta.get("name") or "")
                self._call_delete(obj)

    def _mark_synced(self, namespace: str | None) -> None:
        self._synced.add(namespace)
        if len(self._synced) == len(self.namespaces):
            self._synced_event.set()

    def _call_add(self, obj: Obj) -> None:
        for handler in self._add:
            try:
                handler(obj)
            except Exception:
                log.exception("%s: add handler failed", self.ref)

    def _call_update(self, old: Obj, new: Obj) -> None:
        for handler in self._update:
            try:
                handler(old, new)
            except Exception:
                log.exception("%s: update handler failed", self.ref)

    def _call_delete(self, obj: Obj) -> None:
        for handler in self._delete:
            try:
                handler(obj)
            except Exception:
                log.exception("%s: delete handler failed", self.ref)
