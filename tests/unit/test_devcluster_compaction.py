"""History compaction's decisions on a bare store (kubetrain.devcluster.apiserver.storage.compaction), as
k8s.io/apiserver storage/etcd3/compact.go: the first tick, one interval in, only records the
current revision; each later tick compacts to the revision recorded one interval earlier, so
history lives between one and two intervals; an interval of 0 never compacts. A watch from a
version the compaction took gets the watch cache's 410 (status Failure, reason Expired, code 410,
"too old resource version: X (Y)"); the count cap (`watch_window`) still bounds the history."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kubetrain.cli import build_parser
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.storage.compaction import Compactor
from kubetrain.devcluster.apiserver.storage.store import Store
from kubetrain.kube.clock import FakeClock

INTERVAL = 300.0


def write(store: Store, name: str) -> int:
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}}
    store.create("configmaps", obj)
    return store.rv


def replayed(store: Store, since: int) -> list[str]:
    watcher = store.watch("configmaps", None, lambda _: True, since)
    store.unwatch(watcher)
    return [obj["metadata"]["name"] for _, obj in watcher.take(1000)]


def too_old(store: Store, since: int) -> ApiError:
    with pytest.raises(ApiError) as caught:
        store.watch("configmaps", None, lambda _: True, since)
    return caught.value


async def test_each_tick_compacts_to_the_revision_recorded_one_interval_earlier() -> None:
    clock, store = FakeClock(), Store(watch_window=1000)
    compactor = Compactor(store, clock.now, INTERVAL)
    write(store, "before")
    await clock.advance(INTERVAL - 1)
    assert compactor.poll() == 0  # not due yet
    await clock.advance(1)
    assert compactor.poll() == 0  # the first tick records the revision, compacts nothing
    recorded = store.rv
    assert replayed(store, 1)[-1] == "before"
    after = write(store, "after")
    await clock.advance(INTERVAL)
    assert compactor.poll() == recorded
    assert store.expired_before == recorded
    # A watch from the version just below the compacted one still resumes (it needs only the
    # events from `recorded` on); anything older is gone.
    assert replayed(store, recorded - 1) == ["before", "after"]
    assert replayed(store, recorded) == ["after"]
    error = too_old(store, recorded - 2)
    assert error.code == 410 and error.reason == "Expired"
    assert error.message == f"too old resource version: {recorded - 2} ({recorded - 1})"
    status = error.status()
    assert (status["status"], status["reason"], status["code"]) == ("Failure", "Expired", 410)
    # The next tick compacts to the revision of the previous one: `after` is now history too.
    await clock.advance(INTERVAL)
    assert compactor.poll() == after
    assert replayed(store, after) == []
    assert too_old(store, after - 2).code == 410


async def test_history_lives_between_one_and_two_intervals() -> None:
    clock, store = FakeClock(), Store(watch_window=1000)
    compactor = Compactor(store, clock.now, INTERVAL)
    await clock.advance(INTERVAL)
    compactor.poll()  # t = 300: records the revision before `w`
    w = write(store, "w")  # written just after a tick
    write(store, "newer")
    await clock.advance(INTERVAL)
    compactor.poll()  # t = 600: compacts to the revision of t = 300, below w
    assert replayed(store, w - 1) == ["w", "newer"]
    await clock.advance(INTERVAL - 1)
    compactor.poll()  # t = 899: not due
    assert replayed(store, w - 1) == ["w", "newer"]
    await clock.advance(1)
    compactor.poll()  # t = 900: compacts to the revision of t = 600, which is after w
    assert too_old(store, w - 1).code == 410


async def test_an_interval_of_zero_never_compacts() -> None:
    clock, store = FakeClock(), Store(watch_window=1000)
    compactor = Compactor(store, clock.now, 0)
    first = write(store, "kept")
    for _ in range(3):
        await clock.advance(365 * 24 * 3600)
        assert compactor.poll() == 0
    assert replayed(store, first - 1) == ["kept"]
    assert store.expired_before == 0 and compactor.compactions == 0


async def test_the_count_cap_still_bounds_a_busy_history_between_ticks() -> None:
    clock, store = FakeClock(), Store(watch_window=5)
    Compactor(store, clock.now, INTERVAL)
    first = write(store, "c0")
    for i in range(1, 8):
        write(store, f"c{i}")
    assert store.history_len() == 5
    assert too_old(store, first).message.startswith(f"too old resource version: {first} (")
    assert replayed(store, store.rv - 5) == ["c3", "c4", "c5", "c6", "c7"]
    assert store.expired_before == 0  # the count cap does not move etcd's compacted revision,
    assert store.oldest_readable() == store.rv - 5  # but older states can no longer be rebuilt


def test_compaction_never_moves_back_and_stops_at_the_current_version() -> None:
    store = Store(watch_window=1000)
    for i in range(5):
        write(store, f"o{i}")
    assert store.compact(store.rv - 1) == 3  # events below the revision leave the history
    assert store.compact(2) == 0 and store.expired_before == store.rv - 1
    assert store.compact(store.rv + 100) == 1
    assert store.expired_before == store.rv
    assert replayed(store, store.rv) == []  # a watch from now is always served


@pytest.mark.parametrize("interval", [-1.0, math.nan, math.inf])
def test_an_interval_that_is_not_zero_or_positive_is_refused(interval: float) -> None:
    with pytest.raises(ValueError, match=r"compaction interval must be 0 \(history is never compacted"):
        Compactor(Store(), FakeClock().now, interval)


def test_kubetrain_dev_compaction_interval_flag(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert parser.parse_args(["dev", "--compaction-interval", "60"]).compaction_interval == 60.0
    assert parser.parse_args(["dev", "--compaction-interval", "0"]).compaction_interval == 0.0
    assert parser.parse_args(["dev"]).compaction_interval == 300.0
    with pytest.raises(SystemExit):
        parser.parse_args(["dev", "--compaction-interval", "soon"])
    err = capsys.readouterr().err
    assert '--compaction-interval: invalid value "soon": seconds, 0 (never compact by time)' in err
