"""JobCache.forget drops every prepared entry of a deleted job (each generation, each operator
setting) and nothing of other jobs, also after the LRU bound has evicted some of them."""

from __future__ import annotations

from typing import Any

import jobs

from kubetrain.operator.prepare import JobCache


def stored(uid: str, generation: int = 1) -> dict[str, Any]:
    obj = jobs.job("PyTorchJob", f"job-{uid}", {"Worker": 2})
    obj["metadata"].update(uid=uid, generation=generation)
    return obj


def test_forget_drops_every_entry_of_the_job_and_only_those() -> None:
    cache = JobCache()
    cache.get(stored("a"))
    cache.get(stored("a", generation=2))  # a spec change: a second entry of the same job
    cache.get(stored("a", generation=2), gang_scheduling=True)  # another operator setting
    cache.get(stored("b"))
    assert len(cache) == 4 and cache.uids() == {"a", "b"}
    cache.forget("a")
    assert len(cache) == 1 and cache.uids() == {"b"}
    cache.forget("a")  # a job seen deleted twice (a relist) or never planned: nothing to do
    cache.forget("never-seen")
    assert len(cache) == 1
    prepared = cache.get(stored("b"))
    assert cache.get(stored("b")) is prepared  # b's entry is still served from the cache
    cache.forget("b")
    assert len(cache) == 0 and cache.uids() == set()


def test_the_bound_evicts_least_recently_used_entries_and_forget_still_finds_the_rest() -> None:
    cache = JobCache(max_entries=3)
    for uid in ("a", "b", "c"):
        cache.get(stored(uid))
    cache.get(stored("a"))  # a is now the most recently used: b goes first
    cache.get(stored("d"))
    assert len(cache) == 3 and cache.uids() == {"a", "c", "d"}
    cache.get(stored("d", generation=2))  # c goes
    assert cache.uids() == {"a", "d"}
    cache.forget("d")
    assert len(cache) == 1 and cache.uids() == {"a"}
    cache.forget("b")  # evicted already
    assert cache.uids() == {"a"}


def test_objects_without_uid_or_generation_are_not_cached() -> None:
    cache = JobCache()
    obj = jobs.job("PyTorchJob", "render-input", {"Worker": 1})
    cache.get(obj)
    assert len(cache) == 0 and cache.uids() == set()
