"""Fault injection: drop watches, expire resourceVersions, fail or delay the Nth matching request."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import GroupResource
from kubetrain.devcluster.apiserver.storage.store import Store


@dataclass
class FaultRule:
    """Requests matching verb/resource/namespace/name (None = any) are counted; the `nth` and the
    following `count - 1` matches fail with `status` (after `delay` seconds) or, with status None,
    are only delayed. `fired` counts the requests the rule acted on."""

    verb: str | None
    resource: str | None
    namespace: str | None
    name: str | None
    nth: int
    status: int | None
    delay: float
    count: int
    message: str | None = None
    seen: int = 0
    fired: int = 0

    def matches(self, verb: str, resource: str, namespace: str, name: str) -> bool:
        return (
            (self.verb is None or self.verb == verb)
            and (self.resource is None or self.resource == resource)
            and (self.namespace is None or self.namespace == namespace)
            and (self.name is None or self.name == name)
        )

    @property
    def exhausted(self) -> bool:
        return self.fired >= self.count


class FaultInjector:
    def __init__(self, store: Store) -> None:
        self._store = store
        self.rules: list[FaultRule] = []

    def close_watches(self) -> int:
        """End every open watch stream (clients see the stream close, as when an apiserver restarts)."""
        return self._store.close_watches()

    def expire_resource_versions(self) -> None:
        """Compact the history: watches and continue tokens from any earlier version get 410 Gone."""
        self._store.expire()

    def fail(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        nth: int = 1,
        status: int | None = 500,
        delay: float = 0.0,
        count: int = 1,
        message: str | None = None,
    ) -> FaultRule:
        if nth < 1 or count < 1:
            raise ValueError("nth and count must be >= 1")
        if status is None and delay <= 0:
            raise ValueError("give a status to fail with, a delay, or both")
        rule = FaultRule(verb, resource, namespace, name, nth, status, delay, count, message)
        self.rules.append(rule)
        return rule

    def delay(self, seconds: float, **match: str | int | None) -> FaultRule:
        return self.fail(status=None, delay=seconds, **match)  # type: ignore[arg-type]

    def clear(self) -> None:
        self.rules.clear()

    async def check(self, verb: str, resource: str, group: str, namespace: str, name: str) -> None:
        """Called for every resource request before it is served; raises the injected error."""
        if not self.rules:
            return
        for rule in list(self.rules):
            if rule.exhausted or not rule.matches(verb, resource, namespace, name):
                continue
            rule.seen += 1
            if rule.seen < rule.nth:
                continue
            rule.fired += 1
            if rule.exhausted:
                self.rules.remove(rule)
            if rule.delay > 0:
                await asyncio.sleep(rule.delay)
            if rule.status is not None:
                gr = GroupResource(group, resource.split("/")[0])
                raise errors.for_status_code(rule.status, gr, name, rule.message)
            return
