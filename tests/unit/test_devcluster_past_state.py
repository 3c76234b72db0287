"""Reads at an older resourceVersion on a bare store (Store.items_at), as etcd serves a range read
at any revision it still holds: the state at V is the current state with every later event undone.
Versions whose events are gone — compacted, or dropped by the history's count cap — are refused
rather than rebuilt wrongly."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.storage.compaction import Compactor
from kubetrain.devcluster.apiserver.storage.store import Store
from kubetrain.kube.clock import FakeClock

INTERVAL = 300.0


def cm(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "data": data,
    }


def state(
    store: Store, rv: int, namespace: str | None = "default", rkey: str = "configmaps"
) -> dict[str, Any]:
    return {o["metadata"]["name"]: o.get("data") for o in store.items_at(rkey, namespace, rv)}


def test_the_state_at_an_old_version_undoes_every_later_create_update_and_delete() -> None:
    store = Store(watch_window=1000)
    store.create("configmaps", cm("a", v="1"))
    store.create("configmaps", cm("b", v="1"))
    at = store.rv
    store.update("configmaps", cm("a", v="2"), None)
    store.remove("configmaps", "default", "b")
    store.create("configmaps", cm("c", v="1"))
    store.create("configmaps", cm("b", v="new"))  # deleted and created again after `at`
    assert state(store, at) == {"a": {"v": "1"}, "b": {"v": "1"}}
    assert state(store, at + 1) == {"a": {"v": "2"}, "b": {"v": "1"}}
    assert state(store, store.rv) == {"a": {"v": "2"}, "b": {"v": "new"}, "c": {"v": "1"}}
    # The rebuilt objects are the stored ones, resourceVersion included.
    old_a = next(o for o in store.items_at("configmaps", "default", at) if o["metadata"]["name"] == "a")
    assert old_a["metadata"]["resourceVersion"] == str(at - 1)


def test_other_namespaces_and_resources_do_not_leak_into_the_state() -> None:
    store = Store(watch_window=1000)
    store.create("configmaps", cm("a"))
    at = store.rv
    store.create("configmaps", cm("x", namespace="other"))
    store.create("secrets", cm("s"))
    store.remove("configmaps", "default", "a")
    assert state(store, at) == {"a": {}}
    assert state(store, at, namespace="other") == {}
    assert state(store, store.rv, namespace=None) == {"x": {}}
    assert state(store, at, namespace=None) == {"a": {}}
    assert state(store, at, rkey="secrets") == {}


def test_a_version_whose_events_the_count_cap_dropped_is_unreadable_not_wrong() -> None:
    store = Store(watch_window=3)
    store.create("configmaps", cm("a", v="1"))
    before = store.rv
    for i in range(2, 6):
        store.update("configmaps", cm("a", v=str(i)), None)
    assert store.expired_before == 0  # nothing compacted, but the first updates' events are gone
    assert store.oldest_readable() == store.rv - 3
    with pytest.raises(LookupError):
        store.items_at("configmaps", "default", before)
    assert state(store, store.rv - 3) == {"a": {"v": "2"}}
    with pytest.raises(LookupError):  # nor a version that does not exist yet
        store.items_at("configmaps", "default", store.rv + 1)


async def test_compaction_makes_older_versions_unreadable_and_keeps_the_rest() -> None:
    clock, store = FakeClock(), Store(watch_window=1000)
    compactor = Compactor(store, clock.now, INTERVAL)
    store.create("configmaps", cm("a", v="1"))
    first = store.rv
    await clock.advance(INTERVAL)
    compactor.poll()  # records the current version
    recorded = store.rv
    store.update("configmaps", cm("a", v="2"), None)
    assert state(store, first) == {"a": {"v": "1"}}  # not compacted yet
    await clock.advance(INTERVAL)
    assert compactor.poll() == recorded
    assert store.oldest_readable() == recorded
    with pytest.raises(LookupError):
        store.items_at("configmaps", "default", recorded - 1)
    assert state(store, recorded) == {"a": {"v": "1"}}
    store.expire()
    assert store.oldest_readable() == store.rv
    assert state(store, store.rv) == {"a": {"v": "2"}}
