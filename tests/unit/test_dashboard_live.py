"""The dashboard's per-user access cache (TTL on an injected clock, bounded), the live-update
hub (bounded queues that overflow into one resync), and the escaping of the Gantt SVG."""

from __future__ import annotations

from typing import Any

from kubetrain.dashboard.access import AccessCache, visible_rows
from kubetrain.dashboard.views import joblist
from kubetrain.dashboard.views.auth import Credentials
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.dashboard.watch import Change, Hub, slim_job
from kubetrain.kube.clock import FakeClock

KINDS = served_kinds(["kubetrain.io"])
PT = next(k for k in KINDS if k.kind == "PyTorchJob")
TF = next(k for k in KINDS if k.kind == "TFJob")


class Reviews:
    """Stands in for AsUser.can: answers from a table, counts the reviews asked."""

    def __init__(self, allowed: set[tuple[str, str]]) -> None:
        self.allowed = allowed
        self.asked: list[tuple[str, str]] = []

    async def can(self, *, verb: str, group: str, resource: str, namespace: str = "", **_: Any) -> bool:
        self.asked.append((resource, namespace))
        return (resource, namespace) in self.allowed


async def test_answers_are_cached_for_the_ttl_per_user() -> None:
    clock = FakeClock()
    cache = AccessCache(ttl=10, clock=clock)
    api = Reviews({("pytorchjobs", "a")})
    alice, bob = Credentials(token="a"), Credentials(token="b")
    assert await cache.allowed(api, alice, "list", "kubetrain.io", "pytorchjobs", "a")  # type: ignore[arg-type]
    assert await cache.allowed(api, alice, "list", "kubetrain.io", "pytorchjobs", "a")  # type: ignore[arg-type]
    assert len(api.asked) == 1
    await cache.allowed(api, bob, "list", "kubetrain.io", "pytorchjobs", "a")  # type: ignore[arg-type]
    assert len(api.asked) == 2  # another user: asked again
    api.allowed.clear()  # the right is revoked
    await clock.advance(9.9)
    assert await cache.allowed(api, alice, "list", "kubetrain.io", "pytorchjobs", "a")  # type: ignore[arg-type]
    await clock.advance(0.2)
    assert not await cache.allowed(api, alice, "list", "kubetrain.io", "pytorchjobs", "a")  # type: ignore[arg-type]


async def test_visible_asks_cluster_wide_first_then_per_namespace() -> None:
    cache = AccessCache(clock=FakeClock())
    api = Reviews({("pytorchjobs", ""), ("tfjobs", "b")})
    visible = await cache.visible(api, Credentials(token="t"), {PT: {"a", "b"}, TF: {"a", "b"}})  # type: ignore[arg-type]
    assert visible == {(PT.resource, ""), (TF.resource, "b")}
    assert sorted(api.asked) == [("pytorchjobs", ""), ("tfjobs", ""), ("tfjobs", "a"), ("tfjobs", "b")]
    rows = [
        joblist.job_row(kind, {"metadata": {"name": f"{kind.plural}-{ns}", "namespace": ns}})
        for kind in (PT, TF)
        for ns in ("a", "b")
    ]
    assert [r.name for r in visible_rows(rows, visible)] == ["pytorchjobs-a", "pytorchjobs-b", "tfjobs-b"]


async def test_the_cache_is_bounded() -> None:
    cache = AccessCache(max_entries=3, clock=FakeClock())
    api = Reviews(set())
    for ns in "abcde":
        await cache.allowed(api, Credentials(token="t"), "list", "", "pods", ns)  # type: ignore[arg-type]
    assert len(cache._answers) == 3


def test_a_slow_subscriber_gets_one_resync_not_more_memory() -> None:
    hub = Hub(queue_size=3)
    with hub.subscribe() as queue:
        for i in range(10):
            hub.publish(Change("g", "p", "ns", f"j{i}", "Running"))
        got = [queue.get_nowait()[1] for _ in range(queue.qsize())]
        assert [c.name for c in got[:2]] == ["j0", "j1"] and got[2].resync and len(got) == 3
    assert hub.subscribers == 0


def test_a_stream_starts_where_its_page_was_rendered() -> None:
    """The changes after the page's position are replayed before the live ones, as a watch
    resumes from a resourceVersion; a position no longer kept, or another process's, is a resync."""
    hub = Hub(queue_size=4)
    hub.publish(Change("g", "p", "ns", "before", "Running"))
    rendered = hub.position()
    hub.publish(Change("g", "p", "ns", "between", "Suspended"))  # after the render, before the stream
    with hub.subscribe(hub.parse_position(rendered)) as queue:
        hub.publish(Change("g", "p", "ns", "live", "Running"))
        got = [queue.get_nowait() for _ in range(queue.qsize())]
    assert [(seq, c.name) for seq, c in got] == [(2, "between"), (3, "live")]
    with hub.subscribe(hub.parse_position(hub.position())) as queue:
        assert queue.empty()  # nothing missed
    for i in range(5):
        hub.publish(Change("g", "p", "ns", f"later{i}", "Running"))
    with hub.subscribe(hub.parse_position(rendered)) as queue:  # 'between' is no longer kept
        [(_, change)] = [queue.get_nowait() for _ in range(queue.qsize())]
        assert change.resync
    other = Hub()
    with hub.subscribe(hub.parse_position(other.position())) as queue:  # an earlier process's page
        assert queue.get_nowait()[1].resync
    assert hub.parse_position(None) is None and hub.parse_position("") is None


def test_the_cached_job_keeps_what_rows_read() -> None:
    job = {
        "metadata": {"name": "j", "annotations": {"big": "x" * 1000}, "managedFields": [{}]},
        "spec": {
            "pytorchReplicaSpecs": {"Worker": {"replicas": 3, "template": {"spec": {"containers": []}}}},
            "runPolicy": {"suspend": True},
        },
        "status": {"conditions": [{"type": "Running", "status": "True"}]},
    }
    slim = slim_job(job)
    assert slim["spec"] == {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}
    assert "annotations" not in slim["metadata"] and "managedFields" not in slim["metadata"]
    assert joblist.job_row(PT, slim).replicas == "Worker 0/3"
