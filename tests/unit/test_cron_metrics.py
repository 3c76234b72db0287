"""Per-cron series (operator/cronmetrics.py): created / failed-to-create / skipped counters and
the last-schedule gauge, a skipped time counted once, the cap on crons with series, and forget."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from kubetrain.operator import cronmetrics
from kubetrain.serving.metrics import REGISTRY

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    yield
    for cron in list(cronmetrics._crons):
        cronmetrics.forget(cron)


def value(name: str, cron: tuple[str, str, str]) -> float | None:
    return REGISTRY.get_sample_value(name, dict(zip(("kind", "namespace", "name"), cron, strict=True)))


def test_created_failed_and_skipped_are_counted_and_the_last_schedule_is_a_gauge() -> None:
    cron = ("TrainingCron", "ns", "nightly")
    cronmetrics.observe(cron, ["SuccessfulCreate"], None, T0)
    cronmetrics.observe(cron, ["FailedCreate"], None, T0)
    cronmetrics.observe(cron, ["FailedCreate", "SuccessfulCreate"], None, T0 + timedelta(minutes=5))
    assert value("kubetrain_cron_jobs_created_total", cron) == 2
    assert value("kubetrain_cron_jobs_failed_to_create_total", cron) == 2
    assert (
        value("kubetrain_cron_last_schedule_timestamp_seconds", cron)
        == (T0 + timedelta(minutes=5)).timestamp()
    )
    # Forbid: the same scheduled time skipped on every pass while the job runs counts once.
    later = T0 + timedelta(minutes=10)
    for _ in range(3):
        cronmetrics.observe(cron, ["JobAlreadyActive"], later, None)
    assert value("kubetrain_cron_jobs_skipped_total", cron) == 1
    cronmetrics.observe(cron, ["JobAlreadyActive"], later + timedelta(minutes=5), None)
    assert value("kubetrain_cron_jobs_skipped_total", cron) == 2


def test_past_the_cap_the_least_recently_heard_from_cron_loses_its_series(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cronmetrics, "MAX_CRONS", 2)
    a, b, c = (("Cron", "ns", n) for n in "abc")
    cronmetrics.observe(a, ["SuccessfulCreate"], None, T0)
    cronmetrics.observe(b, ["SuccessfulCreate"], None, T0)
    cronmetrics.observe(a, [], None, None)  # a heard from again: b is now the oldest
    cronmetrics.observe(c, ["SuccessfulCreate"], None, T0)
    assert value("kubetrain_cron_jobs_created_total", b) is None
    assert value("kubetrain_cron_last_schedule_timestamp_seconds", b) is None
    assert value("kubetrain_cron_jobs_created_total", a) == 1
    assert value("kubetrain_cron_jobs_created_total", c) == 1


def test_a_deleted_cron_loses_its_series() -> None:
    cron = ("TrainingCron", "ns", "gone")
    cronmetrics.observe(cron, ["SuccessfulCreate"], T0, T0)
    cronmetrics.forget(cron)
    for name in ("created_total", "skipped_total"):
        assert value(f"kubetrain_cron_jobs_{name}", cron) is None
    assert value("kubetrain_cron_last_schedule_timestamp_seconds", cron) is None
