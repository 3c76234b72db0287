"""Informer reflector logic and the cache, against a scripted client (no server, no real sleeps).

The same behaviours run against devcluster in tests/integration/test_kube_informer.py; these
pin the exact call pattern (when it lists, from which resourceVersion it re-watches).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest

from kubetrain.kube.cache import Cache, Store, object_key, slim_pod, split_key
from kubetrain.kube.client import ApiError, GoneError, KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import PODS, TRAINING_POLICIES, job_resource

Obj = dict[str, Any]


def pod(name: str, rv: str, ns: str = "ns", job: str | None = None, kind: str = "TFJob") -> Obj:
    labels = {"kubetrain.io/job-name": job, "kubetrain.io/job-kind": kind} if job else {}
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "resourceVersion": rv,
            "labels": labels,
            "managedFields": [{"manager": "x"}],
        }
    }


class ScriptedClient:
    """list_all answers from `lists`; each watch plays the next script of `watches` (events or
    an exception), then ends; with no script left a watch blocks until cancelled."""

    def __init__(self) -> None:
        self.lists: list[tuple[list[Obj], str] | Exception] = []
        self.watches: list[list[tuple[str, Obj] | Exception]] = []
        self.list_calls: list[str | None] = []
        self.watch_calls: list[tuple[str | None, str | None]] = []
        self.watch_started = asyncio.Event()

    async def list_all(self, ref: Any, namespace: str | None, **_: Any) -> tuple[list[Obj], str]:
        self.list_calls.append(namespace)
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def watch(
        self, ref: Any, namespace: str | None, **kw: Any
    ) -> AsyncGenerator[tuple[str, Obj], None]:
        self.watch_calls.append((namespace, kw.get("resource_version")))
        self.watch_started.set()
        if not self.watches:
            await asyncio.Event().wait()
        for item in self.watches.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item


class Recorder:
    def __init__(self, informer: Informer) -> None:
        self.events: list[tuple[str, str, str]] = []
        informer.add_handler(
            on_add=lambda o: self.events.append(
                ("add", o["metadata"]["name"], o["metadata"]["resourceVersion"])
            ),
            on_update=lambda old, new: self.events.append(
                ("update", new["metadata"]["name"], new["metadata"]["resourceVersion"])
            ),
            on_delete=lambda o: self.events.append(
                ("delete", o["metadata"]["name"], o["metadata"]["resourceVersion"])
            ),
        )


async def settle(client: ScriptedClient, clock: FakeClock, watches: int) -> None:
    """Let the informer run until it has started `watches` watches in total."""
    for _ in range(200):
        if len(client.watch_calls) >= watches:
            break
        await clock.advance(1)
    await clock.advance(0)
    assert len(client.watch_calls) >= watches


def make(client: ScriptedClient, clock: FakeClock, **kw: Any) -> Informer:
    return Informer(cast(KubeClient, client), PODS, clock=clock, **kw)


async def test_initial_list_fills_the_store_fires_adds_and_marks_synced() -> None:
    client, clock = ScriptedClient(), FakeClock()
    client.lists = [([pod("a", "1", job="j"), pod("b", "2", job="j"), pod("c", "3")], "10")]
    cache = Cache()
    inf = make(client, clock, cache=cache)
    rec = Recorder(inf)
    assert not inf.has_synced
    inf.start()
    await asyncio.wait_for(inf.wait_synced(), 1)
    await settle(client, clock, 1)
    assert rec.events == [("add", "a", "1"), ("add", "b", "2"), ("add", "c", "3")]
    assert client.watch_calls == [(None, "10")]  # watch from the list's resourceVersion
    store = cache.store(PODS)
    assert store.get("ns", "a") is not None
    assert {p["metadata"]["name"] for p in cache.for_job(PODS, "ns", "j")} == {"a", "b"}
    a = store.get("ns", "a")
    assert a is not None
    assert a["kind"] == "Pod" and a["apiVersion"] == "v1"  # filled in like watch objects
    assert "managedFields" not in a["metadata"]
    await inf.stop()


async def test_watch_events_update_store_and_rewatch_from_last_rv_without_listing() -> None:
    client, clock = ScriptedClient(), FakeClock()
    client.lists = [([pod("a", "1", job="j")], "10")]
    client.watches = [
        [
            ("ADDED", pod("b", "11", job="j")),
            ("MODIFIED", pod("a", "12", job="k")),
            ("BOOKMARK", pod("", "15")),
        ],
        [("DELETED", pod("b", "16", job="j"))],
        [],  # the server closed a watch without events
    ]
    inf = make(client, clock)
    rec = Recorder(inf)
    inf.start()
    await settle(client, clock, 4)
    assert rec.events == [("add", "a", "1"), ("add", "b", "11"), ("update", "a", "12"), ("delete", "b", "16")]
    assert client.watch_calls == [(None, "10"), (None, "15"), (None, "16"), (None, "16")]
    assert client.list_calls == [None]  # zero LIST after the initial sync
    assert inf.store.by_label("ns", "j") == []  # the label index follows relabelling
    assert [p["metadata"]["name"] for p in inf.store.by_label("ns", "k")] == ["a"]
    await inf.stop()


async def test_410_gone_relists_and_raises_whatever_changed_meanwhile() -> None:
    client, clock = ScriptedClient(), FakeClock()
    client.lists = [
        ([pod("a", "1"), pod("b", "2"), pod("c", "3")], "10"),
        # after the 410: a changed, b unchanged, c deleted, d created — all while unwatched
        ([pod("a", "20"), pod("b", "2"), pod("d", "21")], "30"),
    ]
    client.watches = [[GoneError(410, "Expired", "too old resource version")]]
    inf = make(client, clock)
    rec = Recorder(inf)
    inf.start()
    await settle(client, clock, 2)
    assert client.list_calls == [None, None]
    assert rec.events[3:] == [("update", "a", "20"), ("add", "d", "21"), ("delete", "c", "3")]
    assert client.watch_calls[-1] == (None, "30")
    assert sorted(inf.store.keys()) == ["ns/a", "ns/b", "ns/d"]
    await inf.stop()


async def test_watch_errors_back_off_and_resume_from_the_same_rv() -> None:
    client, clock = ScriptedClient(), FakeClock()
    client.lists = [([], "10")]
    client.watches = [
        [ApiError(0, "ClientConnectionError", "connection reset")],
        [ApiError(0, "Timeout", "no data for 330 s")],  # a silent stream
        [ApiError(500, "InternalError", "boom")],
    ]
    inf = make(client, clock, backoff_base=1.0)
    inf.start()
    await settle(client, clock, 4)
    assert client.watch_calls == [(None, "10")] * 4
    assert client.list_calls == [None]
    await inf.stop()


async def test_list_failure_is_retried_before_sync() -> None:
    client, clock = ScriptedClient(), FakeClock()
    client.lists = [ApiError(503, "ServiceUnavailable", "starting"), ([pod("a", "1")], "5")]
    inf = make(client, clock, backoff_base=1.0)
    inf.start()
    await settle(client, clock, 1)
    assert inf.has_synced
    assert client.list_calls == [None, None]
    await inf.stop()


async def test_a_failing_handler_does_not_stop_the_informer() -> None:
    client, clock = ScriptedClient(), FakeClock()
    client.lists = [([pod("a", "1")], "10")]
    client.watches = [[("ADDED", pod("b", "11"))]]
    inf = make(client, clock)
    seen: list[str] = []

    def bad(obj: Obj) -> None:
        raise RuntimeError("handler bug")

    inf.add_handler(on_add=bad)
    inf.add_handler(on_add=lambda o: seen.append(o["metadata"]["name"]))
    inf.start()
    await settle(client, clock, 2)
    assert seen == ["a", "b"]
    assert inf.store.get("ns", "b") is not None
    await inf.stop()


async def test_one_list_watch_per_namespace_synced_when_all_are() -> None:
    client, clock = ScriptedClient(), FakeClock()
    client.lists = [([pod("a", "1", ns="x")], "10"), ([pod("b", "2", ns="y")], "11")]
    inf = make(client, clock, namespaces=["x", "y"])
    inf.start()
    await settle(client, clock, 2)
    assert inf.has_synced
    assert sorted(client.list_calls, key=str) == ["x", "y"]
    assert sorted(inf.store.keys()) == ["x/a", "y/b"]
    await inf.stop()


async def test_relist_of_one_namespace_leaves_the_others_alone() -> None:
    client, clock = ScriptedClient(), FakeClock()
    store = Store(PODS)
    store.upsert(pod("other", "1", ns="y"))
    client.lists = [([pod("a", "1", ns="x")], "10")]
    inf = Informer(cast(KubeClient, client), PODS, store=store, namespaces=["x"], clock=clock)
    inf.start()
    await settle(client, clock, 1)
    assert sorted(store.keys()) == ["x/a", "y/other"]
    await inf.stop()


# --- cache / keys / resources --------------------------------------------------------------------


def test_store_for_job_filters_by_kind_label() -> None:
    store = Store(PODS)
    store.upsert(pod("t-worker-0", "1", job="t", kind="TFJob"))
    store.upsert(pod("t-worker-0b", "2", job="t", kind="PyTorchJob"))
    assert [p["metadata"]["name"] for p in store.for_job("ns", "t", kind="TFJob")] == ["t-worker-0"]
    assert len(store.for_job("ns", "t")) == 2
    assert store.remove("ns", "t-worker-0") is not None
    assert store.remove("ns", "t-worker-0") is None
    assert [p["metadata"]["name"] for p in store.for_job("ns", "t")] == ["t-worker-0b"]
    assert len(store) == 1 and "ns/t-worker-0b" in store


def test_object_keys_round_trip() -> None:
    assert object_key(pod("a", "1")) == "ns/a"
    assert object_key({"metadata": {"name": "cluster-wide"}}) == "cluster-wide"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("cluster-wide") == (None, "cluster-wide")


def test_resource_paths() -> None:
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.path("ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    tf = job_resource("TFJob")
    assert tf.path("ns", "j", "status") == "/apis/kubetrain.io/v1/namespaces/ns/tfjobs/j/status"
    assert tf.api_version == "kubetrain.io/v1"
    assert TRAINING_POLICIES.path(None, "p") == "/apis/kubetrain.io/v1/trainingpolicies/p"
    with pytest.raises(ValueError, match="cluster-scoped"):
        TRAINING_POLICIES.path("ns", "p")
    with pytest.raises(ValueError, match="namespace"):
        PODS.path(None, "p")
    with pytest.raises(KeyError, match="known kinds"):
        job_resource("FooJob")


def full_pod(name: str, rv: str) -> Obj:
    p = pod(name, rv, job="j")
    p["spec"] = {
        "nodeName": "node-1",
        "schedulerName": "default-scheduler",
        "restartPolicy": "Never",
        "containers": [
            {"name": "c", "image": "x", "env": [{"name": f"E{i}", "value": "v"} for i in range(50)]}
        ],
        "volumes": [{"name": "token", "projected": {"sources": []}}],
    }
    p["status"] = {"phase": "Running", "containerStatuses": [{"name": "c", "restartCount": 2}]}
    return p


async def test_a_transform_slims_listed_and_watched_objects_before_store_and_handlers() -> None:
    client, clock = ScriptedClient(), FakeClock()
    client.lists = [([full_pod("a", "1")], "10")]
    client.watches = [[("MODIFIED", full_pod("a", "11")), ("ADDED", full_pod("b", "12"))]]
    seen: list[Obj] = []
    inf = make(client, clock, transform=slim_pod)
    inf.add_handler(on_add=seen.append, on_update=lambda _old, new: seen.append(new))
    inf.start()
    await settle(client, clock, 2)
    for obj in [*seen, *inf.store.list()]:
        assert obj["spec"] == {
            "nodeName": "node-1",
            "schedulerName": "default-scheduler",
            "restartPolicy": "Never",
        }
        assert obj["status"]["containerStatuses"][0]["restartCount"] == 2  # status kept whole
        assert obj["metadata"]["labels"] == {"kubetrain.io/job-name": "j", "kubetrain.io/job-kind": "TFJob"}
        assert "managedFields" not in obj["metadata"]
    assert [o["metadata"]["resourceVersion"] for o in seen] == ["1", "11", "12"]
    await inf.stop()
