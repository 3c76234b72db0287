"""Informer against devcluster: initial sync, events, the job-name index, and no lost update
when watches are dropped or resourceVersions expire (B's FaultInjector); LIST budget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pods import pod_manifest

from kubetrain.kube.cache import Cache
from kubetrain.kube.client import KubeClient
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import PODS

NS = "default"


def pod(name: str, job: str = "j", **labels: str) -> dict[str, Any]:
    return pod_manifest(name, namespace=NS, labels={"kubetrain.io/job-name": job, **labels})


def label(cache: Cache, name: str, key: str) -> str | None:
    obj = cache.get(PODS, NS, name)
    value = ((obj or {}).get("metadata") or {}).get("labels", {}).get(key)
    return value if isinstance(value, str) else None


async def close_open_watches(devcluster: Any) -> None:
    """Drop the informer's watch (waiting for it to be open first: it starts after the sync)."""
    for _ in range(500):
        if devcluster.faults.close_watches():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the informer never opened a watch")


class Events:
    def __init__(self, informer: Informer) -> None:
        self.log: list[tuple[str, str, dict[str, Any]]] = []
        self.changed = asyncio.Event()
        informer.add_handler(
            on_add=lambda o: self._add("add", o),
            on_update=lambda old, new: self._add("update", new),
            on_delete=lambda o: self._add("delete", o),
        )

    def _add(self, kind: str, obj: dict[str, Any]) -> None:
        self.log.append((kind, obj["metadata"]["name"], obj))
        self.changed.set()

    async def wait_for(self, predicate: Callable[[], bool], limit: float = 10) -> None:
        async with asyncio.timeout(limit):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


async def started(kube: KubeClient, **kw: Any) -> tuple[Informer, Events, Cache]:
    cache = Cache()
    informer = Informer(kube, PODS, cache=cache, namespaces=[NS], **kw)
    events = Events(informer)
    informer.start()
    async with asyncio.timeout(10):
        await informer.wait_synced()
    return informer, events, cache


async def test_sync_then_events_with_zero_lists_after_sync(kube: KubeClient, devcluster: Any) -> None:
    for i in range(7):
        await kube.create(PODS, pod(f"pre-{i}", job="old"))
    devcluster.requests.reset()
    informer, events, cache = await started(kube, page_size=3)
    try:
        assert informer.has_synced
        assert devcluster.requests.count(verb="list", resource="pods") == 3  # 7 pods, pages of 3
        assert len(cache.for_job(PODS, NS, "old")) == 7
        assert sum(1 for e in events.log if e[0] == "add") == 7

        await kube.create(PODS, pod("new-0", job="j"))
        await kube.patch(PODS, NS, "new-0", {"metadata": {"labels": {"extra": "x"}}})
        await kube.delete(PODS, NS, "pre-0", grace_period_seconds=0)
        await events.wait_for(lambda: cache.get(PODS, NS, "pre-0") is None)
        await events.wait_for(
            lambda: (
                (cache.get(PODS, NS, "new-0") or {}).get("metadata", {}).get("labels", {}).get("extra") == "x"
            )
        )
        names = [(kind, name) for kind, name, _ in events.log[7:]]
        assert ("add", "new-0") in names and ("update", "new-0") in names and ("delete", "pre-0") in names
        assert [p["metadata"]["name"] for p in cache.for_job(PODS, NS, "j")] == ["new-0"]
        assert devcluster.requests.count(verb="list", resource="pods") == 3  # no LIST after the sync
        assert informer.lists == 1
    finally:
        await informer.stop()


async def test_closed_watches_are_resumed_without_relisting_or_losing_updates(
    kube: KubeClient, devcluster: Any
) -> None:
    await kube.create(PODS, pod("p"))
    informer, events, cache = await started(kube, backoff_base=0.05)
    try:
        for round_ in range(3):
            await close_open_watches(devcluster)
            await kube.patch(PODS, NS, "p", {"metadata": {"labels": {"round": str(round_)}}})
            expected = str(round_)
            await events.wait_for(lambda: label(cache, "p", "round") == expected)  # noqa: B023
        assert informer.lists == 1
        assert devcluster.requests.count(verb="list", resource="pods") == 1
        assert devcluster.requests.count(verb="watch", resource="pods") >= 4
    finally:
        await informer.stop()


async def test_expired_resource_version_relists_and_loses_no_update(
    kube: KubeClient, devcluster: Any
) -> None:
    await kube.create(PODS, pod("keep"))
    await kube.create(PODS, pod("change"))
    await kube.create(PODS, pod("remove"))
    informer, events, cache = await started(kube, backoff_base=0.05)
    try:
        # Changes the informer does not see through its watch: the watch is dropped, the changes
        # happen, and history is compacted so the re-watch from the old version gets 410.
        await close_open_watches(devcluster)
        devcluster.faults.fail(verb="watch", resource="pods", status=503, count=10_000)
        await kube.patch(PODS, NS, "change", {"metadata": {"labels": {"v": "2"}}})
        await kube.delete(PODS, NS, "remove", grace_period_seconds=0)
        await kube.create(PODS, pod("added"))
        devcluster.faults.expire_resource_versions()
        devcluster.faults.clear()

        await events.wait_for(lambda: cache.get(PODS, NS, "added") is not None)
        await events.wait_for(lambda: cache.get(PODS, NS, "remove") is None)
        changed = cache.get(PODS, NS, "change")
        assert changed is not None and changed["metadata"]["labels"].get("v") == "2"
        assert informer.lists == 2  # exactly one relist, forced by the 410
        kinds = {(kind, name) for kind, name, _ in events.log}
        assert {("update", "change"), ("delete", "remove"), ("add", "added")} <= kinds
        assert sorted(cache.store(PODS).keys()) == [f"{NS}/added", f"{NS}/change", f"{NS}/keep"]

        # and the informer keeps working on the new watch
        await kube.create(PODS, pod("after"))
        await events.wait_for(lambda: cache.get(PODS, NS, "after") is not None)
    finally:
        await informer.stop()


async def test_silent_stream_is_abandoned_after_the_read_timeout(kube: KubeClient, devcluster: Any) -> None:
    informer, events, cache = await started(kube, read_timeout=0.5, backoff_base=0.05)
    try:
        # the next watch hangs before sending anything (a half-dead connection): it must be
        # given up after the read timeout and replaced by a working one
        await close_open_watches(devcluster)
        devcluster.faults.delay(5.0, verb="watch", resource="pods", count=1)
        await asyncio.sleep(0.1)
        await kube.create(PODS, pod("late"))
        await events.wait_for(lambda: cache.get(PODS, NS, "late") is not None, limit=4)
        assert informer.lists == 1
    finally:
        await informer.stop()
