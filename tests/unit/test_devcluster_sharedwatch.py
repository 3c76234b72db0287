"""devcluster's shared watch (devcluster/sharedwatch.py) over a fake API: one LIST and one WATCH
for every subscriber, each handed the list and the events in the order they subscribed, a
namespaced subscriber only its namespace's objects, and a subscriber that fails costs the others
nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from kubetrain.devcluster.sharedwatch import SharedWatch

Obj = dict[str, Any]


def pod(namespace: str, name: str, rv: str = "1") -> Obj:
    return {"metadata": {"namespace": namespace, "name": name, "resourceVersion": rv}}


class FakeApi:
    def __init__(self, items: list[Obj]) -> None:
        self.items = items
        self.calls: list[str] = []
        self.events: asyncio.Queue[Obj] = asyncio.Queue()

    async def request(self, method: str, path: str, *, query: Any = None) -> tuple[int, Any]:
        self.calls.append(f"LIST {path}")
        return 200, {"items": self.items, "metadata": {"resourceVersion": "1"}}

    async def stream(self, path: str, query: Any) -> AsyncIterator[Obj]:
        self.calls.append(f"WATCH {path}")
        while True:
            yield await self.events.get()


class Recorder:
    def __init__(self, seen: list[str], who: str, fail_on: str | None = None) -> None:
        self.seen, self.who, self.fail_on = seen, who, fail_on

    async def relisted(self, items: list[Obj]) -> None:
        self.seen.append(f"{self.who} list {[o['metadata']['name'] for o in items]}")

    async def observe(self, kind: str, obj: Obj) -> None:
        if obj["metadata"]["name"] == self.fail_on:
            raise RuntimeError("broken handler")
        self.seen.append(f"{self.who} {kind} {obj['metadata']['name']}")


async def test_every_subscriber_is_served_from_one_list_and_one_watch_in_order() -> None:
    api = FakeApi([pod("a", "p1"), pod("b", "p2")])
    watch = SharedWatch("/api/v1/pods")
    seen: list[str] = []
    first, everything, only_a = (
        Recorder(seen, "first", fail_on="p4"),
        Recorder(seen, "all"),
        Recorder(seen, "a"),
    )
    watch.subscribe(first.observe, first.relisted)
    watch.subscribe(everything.observe, everything.relisted)
    watch.subscribe(only_a.observe, only_a.relisted, namespace="a")
    task = asyncio.ensure_future(watch.run(api))  # type: ignore[arg-type]
    try:
        await asyncio.wait_for(watch.synced.wait(), 5)
        for obj in (pod("b", "p3", "2"), pod("a", "p4", "3"), pod("a", "p5", "4")):
            await api.events.put({"type": "ADDED", "object": obj})
        for _ in range(100):
            if seen[-1:] == ["a ADDED p5"]:
                break
            await asyncio.sleep(0)
        assert seen == [
            "first list ['p1', 'p2']",
            "all list ['p1', 'p2']",
            "a list ['p1']",
            "first ADDED p3",
            "all ADDED p3",
            "all ADDED p4",  # `first` failed on p4: the others still get it
            "a ADDED p4",
            "first ADDED p5",
            "all ADDED p5",
            "a ADDED p5",
        ]
        assert api.calls == ["LIST /api/v1/pods", "WATCH /api/v1/pods"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
