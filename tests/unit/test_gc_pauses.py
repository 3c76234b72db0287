"""The garbage-collection pause record (kubetrain.serving.gcpause): every collection is timed
and lands in `kubetrain_gc_pause_seconds` under the generation it collected."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from prometheus_client import generate_latest

from kubetrain.serving.gcpause import GcPauses, PauseStats, install_gc_pause_metric
from kubetrain.serving.metrics import REGISTRY


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def metric() -> Iterator[GcPauses]:
    """The process's recorder, with automatic collections off so that only forced ones count."""
    recorder = install_gc_pause_metric()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield recorder
    finally:
        if enabled:
            gc.enable()
        recorder.uninstall()


def counts() -> dict[int, float]:
    return {g: sample("kubetrain_gc_pause_seconds_count", generation=str(g)) for g in (0, 1, 2)}


@pytest.mark.parametrize("generation", [0, 1, 2])
def test_a_forced_collection_is_counted_in_its_generation(metric: GcPauses, generation: int) -> None:
    before = counts()
    inf_before = sample("kubetrain_gc_pause_seconds_bucket", generation=str(generation), le="+Inf")
    gc.collect(generation)
    expected = {g: n + (1 if g == generation else 0) for g, n in before.items()}
    assert counts() == expected
    assert (
        sample("kubetrain_gc_pause_seconds_bucket", generation=str(generation), le="+Inf") == inf_before + 1
    )
    assert b'kubetrain_gc_pause_seconds_bucket{generation="%d"' % generation in generate_latest(REGISTRY)


def test_installing_twice_records_each_collection_once(metric: GcPauses) -> None:
    install_gc_pause_metric()
    assert gc.callbacks.count(metric) == 1
    before = sample("kubetrain_gc_pause_seconds_count", generation="2")
    gc.collect()
    assert sample("kubetrain_gc_pause_seconds_count", generation="2") == before + 1


def test_the_pause_is_the_clock_between_start_and_stop() -> None:
    ticks = iter([10.0, 10.25, 20.0, 20.002])
    stats = PauseStats()
    pauses = GcPauses([stats.observe], clock=lambda: next(ticks))
    pauses("start", {"generation": 2})
    pauses("stop", {"generation": 2, "collected": 5, "uncollectable": 0})
    pauses("start", {"generation": 0})
    pauses("stop", {"generation": 0, "collected": 0, "uncollectable": 0})
    assert stats.summary() == {
        "gen0": {"count": 1, "total_s": 0.002, "max_ms": 2.0},
        "gen1": {"count": 0, "total_s": 0.0, "max_ms": 0.0},
        "gen2": {"count": 1, "total_s": 0.25, "max_ms": 250.0},
    }


def test_a_stop_without_its_start_is_not_a_pause() -> None:
    # Installed while a collection was running: its "stop" has no "start" to measure from.
    stats = PauseStats()
    pauses = GcPauses([stats.observe], clock=lambda: 1.0)
    pauses("stop", {"generation": 1, "collected": 0, "uncollectable": 0})
    assert stats.by_generation[1].count == 0


def test_the_installed_policy_reports_the_frozen_objects_in_the_gauge(metric: GcPauses) -> None:
    from kubetrain.serving import gcfreeze

    policy = gcfreeze.configure({"KUBETRAIN_GC_FREEZE": "4"})  # automatic collections off (fixture)
    try:
        assert policy is not None
        assert sample("kubetrain_gc_frozen_objects") == gc.get_freeze_count() == policy.frozen > 0
        before = policy.freezes
        gc.collect()
        assert policy.freezes == before + 1
        # About: objects made by the collection's callbacks are frozen without being counted.
        assert sample("kubetrain_gc_frozen_objects") == policy.frozen
        assert abs(policy.frozen - gc.get_freeze_count()) < 100
    finally:
        gcfreeze.configure({"KUBETRAIN_GC_FREEZE": "off"})
        gc.unfreeze()
