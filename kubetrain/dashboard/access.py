"""Which jobs a user may see: SelfSubjectAccessReviews made with the user's own credentials,
answers cached for `ttl` seconds (bounded), so the list page asks the API server at most once per
(user, resource, namespace) per `ttl`.

A user allowed to `list` a job resource cluster-wide sees every job of it; otherwise one review per
namespace that has jobs of it decides, namespace by namespace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from kubetrain.dashboard.ttlcache import TtlCache
from kubetrain.dashboard.views.auth import Credentials
from kubetrain.dashboard.views.joblist import JobRow
from kubetrain.dashboard.views.kinds import JobKind
from kubetrain.kube.asuser import AsUser
from kubetrain.kube.clock import Clock

CacheKey = tuple[str, str, str, str, str]  # fingerprint, verb, group, resource, namespace
DEFAULT_TTL = 10.0
DEFAULT_MAX_ENTRIES = 50_000
CONCURRENT_REVIEWS = 16


class AccessCache:
    def __init__(
        self, ttl: float = DEFAULT_TTL, max_entries: int = DEFAULT_MAX_ENTRIES, clock: Clock | None = None
    ) -> None:
        self._answers: TtlCache[CacheKey, bool] = TtlCache(ttl, max_entries, clock)
        self.reviews = 0  # SelfSubjectAccessReviews sent (tests, budgets)

    async def allowed(
        self, api: AsUser, creds: Credentials, verb: str, group: str, resource: str, namespace: str = ""
    ) -> bool:
        key = (creds.fingerprint, verb, group, resource, namespace)
        fresh, known = self._answers.get(key)
        if fresh:
            return bool(known)
        self.reviews += 1
        answer = await api.can(verb=verb, group=group, resource=resource, namespace=namespace)
        self._answers.put(key, answer)
        return answer

    async def visible(
        self, api: AsUser, creds: Credentials, namespaces: dict[JobKind, set[str]]
    ) -> set[tuple[str, str]]:
        """(kind resource, namespace) pairs of `namespaces` (the namespaces that have jobs of each
        kind) this user may list; a pair with namespace "" means every namespace."""
        gate = asyncio.Semaphore(CONCURRENT_REVIEWS)

        async def check(kind: JobKind, namespace: str) -> tuple[str, str] | None:
            async with gate:
                ok = await self.allowed(api, creds, "list", kind.group, kind.plural, namespace)
            return (kind.resource, namespace) if ok else None

        wide = await asyncio.gather(*(check(kind, "") for kind in namespaces))
        out = {pair for pair in wide if pair is not None}
        everywhere = {resource for resource, _ in out}
        narrow = [
            (kind, ns) for kind, nss in namespaces.items() if kind.resource not in everywhere for ns in nss
        ]
        for pair in await asyncio.gather(*(check(kind, ns) for kind, ns in narrow)):
            if pair is not None:
                out.add(pair)
        return out

    async def pod_namespaces(
        self, api: AsUser, creds: Credentials, rows: Iterable[JobRow]
    ) -> set[str] | None:
        """Of the `rows`' namespaces, those where this user may list pods (the list's pod
        summaries show there only, as the job page shows pods); None when they may list pods
        everywhere."""
        if await self.allowed(api, creds, "list", "", "pods"):
            return None
        namespaces = {row.namespace for row in rows}
        gate = asyncio.Semaphore(CONCURRENT_REVIEWS)

        async def check(namespace: str) -> str | None:
            async with gate:
                return namespace if await self.allowed(api, creds, "list", "", "pods", namespace) else None

        return {ns for ns in await asyncio.gather(*(check(ns) for ns in namespaces)) if ns is not None}


def may_see(visible: set[tuple[str, str]], resource: str, namespace: str) -> bool:
    return (resource, "") in visible or (resource, namespace) in visible


def visible_rows(rows: Iterable[JobRow], visible: set[tuple[str, str]]) -> list[JobRow]:
    """The rows a user may see; a resource they may list everywhere costs no per-row check."""
    everywhere = {resource for resource, ns in visible if not ns}
    return [
        row
        for row in rows
        if row.kind.resource in everywhere or (row.kind.resource, row.namespace) in visible
    ]
