"""Whether a gang scheduler's PodGroup API is installed, followed while the operator runs.

    api = PodGroupApi(client, cache, POD_GROUP_RESOURCES["volcano"], gang_scheduler="volcano",
                      namespaces=None, clock=clock, add_handlers=..., api_changed=...)
    await api.start()     # the CRD's initial list is in (and its PodGroups, if it serves)
    api.installed         # the PodGroup informer runs and has synced
    await api.stop()

An informer watches the one CustomResourceDefinition that serves the PodGroups, by name. While
it exists and is Established, a PodGroup informer runs into the shared cache (`add_handlers`
gives it the caller's event handlers); the API counts as installed once that informer has
synced. `api_changed` is called then, and when the CRD stops serving (its PodGroups are dropped
from the cache first), so jobs waiting for the API proceed without an operator restart.
Without RBAC for that CRD (403), discovery at `start()` decides once.

One instance serves one `start()` … `stop()`: a restarted controller makes a new one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.kube.cache import Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import Clock
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, ResourceRef
from kubetrain.operator.status import is_true

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def crd_name(ref: ResourceRef) -> str:
    """The name of the CustomResourceDefinition that serves `ref`: `<plural>.<group>`."""
    return f"{ref.plural}.{ref.group}"


def crd_serves(crd: Mapping[str, Any], ref: ResourceRef) -> bool:
    """Whether `crd` is Established, not being deleted, and serves `ref`'s version."""
    if (crd.get("metadata") or {}).get("deletionTimestamp"):
        return False
    served = any(
        v.get("name") == ref.version and v.get("served")
        for v in (crd.get("spec") or {}).get("versions") or ()
    )
    return served and is_true(crd.get("status") or {}, "Established")


class PodGroupApi:
    def __init__(
        self,
        client: KubeClient,
        cache: Cache,
        ref: ResourceRef,
        *,
        gang_scheduler: str,
        namespaces: Sequence[str] | None,
        clock: Clock,
        add_handlers: Callable[[Informer], None],
        api_changed: Callable[[], None],
    ) -> None:
        self.client = client
        self.cache = cache
        self.ref = ref
        self.gang_scheduler = gang_scheduler
        self.namespaces = namespaces
        self.clock = clock
        self.add_handlers = add_handlers
        self.api_changed = api_changed
        self._crds: Informer | None = None
        self._forbidden_error: ApiError | None = None
        self._pod_groups: Informer | None = None
        self._syncing: asyncio.Task[None] | None = None
        self._retired: list[Informer] = []  # cancelled PodGroup informers, awaited by stop()
        self._started = False

    @property
    def installed(self) -> bool:
        return self._pod_groups is not None and self._pod_groups.has_synced

    async def start(self) -> None:
        """Watch the PodGroup CRD by name until its initial list is in (or RBAC refuses the
        watch: then discovery decides once), and wait for the PodGroup informer if it serves."""
        name = crd_name(self.ref)
        crds = Informer(
            self.client,
            CUSTOM_RESOURCE_DEFINITIONS,
            cache=self.cache,
            field_selector=f"metadata.name={name}",
            clock=self.clock,
            on_forbidden=self._crd_watch_forbidden,
        )
        crds.add_handler(
            on_add=self._crd_changed,
            on_update=lambda _old, new: self._crd_changed(new),
            on_delete=lambda _crd: self._stop_pod_groups(f"CustomResourceDefinition {name} was deleted"),
        )
        self._crds = crds
        crds.start()
        await crds.wait_ready()  # synced, or refused by RBAC (`_crd_watch_forbidden`)
        if not crds.has_synced:
            log.warning(
                "gang scheduler %s: no permission to watch CustomResourceDefinition %s (%s); "
                "the PodGroup API is looked up once, now: after installing %s, restart the "
                "operator (the chart's current RBAC grants list/watch on that CRD)",
                QUOTE.encode(self.gang_scheduler),
                name,
                self._forbidden_error,
                self.gang_scheduler,
            )
            await crds.stop()
            self._crds = None
            if await self.client.has_api(self.ref.group, self.ref.version, self.ref.plural):
                self._start_pod_groups()
        # The PodGroup informer started from the CRD's initial list: wait for its sync (a CRD
        # deleted meanwhile cancels the wait; one re-created meanwhile starts a new one).
        while (syncing := self._syncing) is not None and not syncing.done():
            await asyncio.wait((syncing,))
        self._started = True
        if not self.installed:
            log.error(
                "gang scheduler %s selected but the PodGroup API %s/%s is not installed: jobs "
                "will get a condition saying so and no pods until it is",
                QUOTE.encode(self.gang_scheduler),
                self.ref.group,
                self.ref.version,
            )

    async def stop(self) -> None:
        if self._syncing is not None:
            self._syncing.cancel()
            self._syncing = None
        informers = [*self._retired, self._pod_groups, self._crds]
        self._retired, self._pod_groups, self._crds = [], None, None
        for informer in informers:
            if informer is not None:
                await informer.stop()

    def _crd_watch_forbidden(self, err: ApiError) -> None:
        self._forbidden_error = err

    def _crd_changed(self, crd: Obj) -> None:
        if crd_serves(crd, self.ref):
            if self._pod_groups is None:
                self._start_pod_groups()
        else:
            self._stop_pod_groups(f"CustomResourceDefinition {crd_name(self.ref)} no longer serves")

    def _start_pod_groups(self) -> None:
        """Start the PodGroup informer; the API counts as installed once it has synced."""
        groups = Informer(
            self.client, self.ref, cache=self.cache, namespaces=self.namespaces, clock=self.clock
        )
        self.add_handlers(groups)
        self._pod_groups = groups
        groups.start()
        self._syncing = asyncio.create_task(self._pod_groups_synced(groups), name="kubetrain podgroups sync")

    async def _pod_groups_synced(self, groups: Informer) -> None:
        await groups.wait_synced()
        if self._pod_groups is not groups:
            return  # stopped meanwhile
        if self._started:
            log.info(
                "PodGroup API %s/%s installed: resuming gang-scheduled jobs", self.ref.group, self.ref.version
            )
        self.api_changed()

    def _stop_pod_groups(self, why: str) -> None:
        """The PodGroup API went away: forget its PodGroups and let every job say so."""
        groups, self._pod_groups = self._pod_groups, None
        if groups is None:
            return
        groups.cancel()  # nothing more reaches the store from this informer
        self._retired.append(groups)
        if self._syncing is not None:
            self._syncing.cancel()
            self._syncing = None
        store = self.cache.store(self.ref)
        for obj in store.list():
            meta = obj.get("metadata") or {}
            store.remove(meta.get("namespace"), meta.get("name", ""))
        log.error("%s: the PodGroup API is not installed any more; gang-scheduled jobs wait", why)
        self.api_changed()
