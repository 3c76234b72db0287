"""The freeze policy's decisions (kubetrain.serving.gcfreeze) against a fake collector: survivors
of every full collection are frozen, a thaw comes once the frozen set outgrew `factor` times its
size after the last thorough collection, and KUBETRAIN_GC_FREEZE is read strictly."""

from __future__ import annotations

import logging

import pytest

from kubetrain.serving.gcfreeze import (
    DEFAULT_FACTOR,
    FreezePolicy,
    GcConfigError,
    factor_from,
)


class FakeCollector:
    """Tracked objects split into young (scanned, in the generations) and frozen (not)."""

    def __init__(self, young: int = 0) -> None:
        self.young = young
        self.frozen = 0
        self.calls: list[str] = []

    def collect(self) -> int:
        self.calls.append("collect")
        return 0

    def freeze(self) -> None:
        self.calls.append("freeze")
        self.frozen += self.young
        self.young = 0

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")
        self.young += self.frozen
        self.frozen = 0

    def get_freeze_count(self) -> int:
        self.calls.append("count")
        return self.frozen

    def survivors(self) -> int:
        return self.young


def test_start_collects_then_freezes_what_the_imports_left() -> None:
    collector = FakeCollector(young=50_000)
    reported: list[int] = []
    policy = FreezePolicy(collector, factor=4, report=reported.append)
    policy.start()
    assert collector.calls == ["collect", "freeze", "count"]
    assert (collector.frozen, policy.baseline, policy.thorough_next) == (50_000, 50_000, False)
    assert reported == [50_000]


def test_young_collections_change_nothing() -> None:
    collector = FakeCollector(young=1_000)
    policy = FreezePolicy(collector)
    assert policy.after_collection(0) == "none"
    assert policy.after_collection(1) == "none"
    assert collector.calls == []


def test_every_full_collection_freezes_its_survivors_without_walking_the_frozen_ones() -> None:
    collector = FakeCollector(young=100_000)
    reported: list[int] = []
    policy = FreezePolicy(collector, factor=4, report=reported.append)
    assert policy.after_collection(2) == "freeze"  # the first one scanned everything: baseline
    assert policy.baseline == 100_000
    collector.young = 30_000  # made since; the next full collection scans only these
    assert policy.after_collection(2) == "freeze"
    assert collector.frozen == 130_000 and collector.young == 0
    assert collector.calls == ["freeze", "freeze"]  # no exact count below the limit
    assert reported == [100_000, 130_000]


def test_a_frozen_set_grown_past_the_factor_is_thawed_and_the_next_full_collection_is_thorough() -> None:
    collector = FakeCollector(young=100_000)
    reported: list[int] = []
    policy = FreezePolicy(collector, factor=2, report=reported.append)
    policy.after_collection(2)
    collector.young = 100_000
    assert policy.after_collection(2) == "freeze"  # 200,000: not past 2 x 100,000
    collector.young = 1
    assert policy.after_collection(2) == "thaw"  # 200,001, counted exactly before deciding
    assert collector.frozen == 0 and collector.young == 200_001
    assert policy.thorough_next and policy.thaws == 1
    # The next full collection scanned everything (it freed, say, half): the new baseline.
    collector.young = 100_000
    assert policy.after_collection(2) == "freeze"
    assert policy.baseline == 100_000 and not policy.thorough_next
    assert collector.calls == ["freeze", "freeze", "freeze", "count", "unfreeze", "freeze"]
    assert reported == [100_000, 200_000, 0, 100_000]


def test_frozen_objects_freed_since_are_counted_before_a_thaw() -> None:
    # Churn: the survivors of each full collection are frozen, then freed by reference counting
    # (jobs deleted). The estimate outgrows the limit; the exact count does not: no thaw.
    collector = FakeCollector(young=100_000)
    policy = FreezePolicy(collector, factor=2)
    policy.after_collection(2)
    for _ in range(3):
        collector.young = 60_000
        assert policy.after_collection(2) == "freeze"
        collector.frozen -= 60_000  # the wave's jobs and pods were deleted
    # Waves 2 and 3 took the estimate past 200,000; counting found 160,000 each time.
    assert policy.thaws == 0 and collector.calls.count("count") == 2
    assert policy.frozen == 160_000


def test_a_tiny_baseline_does_not_make_every_full_collection_a_thaw() -> None:
    collector = FakeCollector(young=10)
    policy = FreezePolicy(collector, factor=2)
    policy.after_collection(2)
    collector.young = 15_000  # far past 2 x 10, not past 2 x the 10,000 floor
    assert policy.after_collection(2) == "freeze"


def test_the_callback_acts_on_stop_only() -> None:
    collector = FakeCollector(young=5)
    policy = FreezePolicy(collector)
    policy("start", {"generation": 2})
    assert collector.calls == []
    policy("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert collector.calls == ["freeze"]


@pytest.mark.parametrize(
    ("value", "factor"),
    [
        (None, DEFAULT_FACTOR),
        ("", DEFAULT_FACTOR),
        ("off", None),
        ("0", None),
        ("OFF", None),
        ("2.5", 2.5),
        ("1", 1.0),
    ],
)
def test_the_environment_variable(value: str | None, factor: float | None) -> None:
    environ = {} if value is None else {"KUBETRAIN_GC_FREEZE": value}
    assert factor_from(environ) == factor


@pytest.mark.parametrize("value", ["fast", "0.5", "-3", "nan", "inf"])
def test_a_bad_value_names_the_variable_and_what_is_valid(value: str) -> None:
    with pytest.raises(GcConfigError) as err:
        factor_from({"KUBETRAIN_GC_FREEZE": value})
    message = str(err.value)
    assert f"KUBETRAIN_GC_FREEZE={value!r} is not valid" in message
    assert "'off'" in message and "≥ 1" in message


@pytest.mark.parametrize("command", ["controller", "dev"])
def test_a_bad_value_stops_the_command_with_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    from kubetrain import cli

    monkeypatch.setenv("KUBETRAIN_GC_FREEZE", "lots")
    with caplog.at_level(logging.INFO):
        code = cli.main([command, "--kubeconfig", "/nonexistent"] if command == "controller" else [command])
    assert code == 2
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    said += capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "KUBETRAIN_GC_FREEZE='lots' is not valid" in said[0]
