"""The cron grammar (robfig/cron ParseStandard, as batch/v1 CronJob) and stepping through time zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubetrain.cron.schedule import ScheduleError, parse_schedule, zone
from kubetrain.cron.times import earliest_time, most_recent, next_wakeup


def at(text: str) -> datetime:
    return (
        datetime.fromisoformat(text).replace(tzinfo=UTC) if "+" not in text else datetime.fromisoformat(text)
    )


def runs(schedule: str, start: str, n: int, tz: str | None = None) -> list[str]:
    sched, z = parse_schedule(schedule), zone(tz)
    out, t = [], at(start)
    for _ in range(n):
        nxt = sched.next_after(t, z)
        assert nxt is not None
        out.append(nxt.strftime("%Y-%m-%dT%H:%M"))
        t = nxt
    return out


@pytest.mark.parametrize(
    ("schedule", "start", "expected"),
    [
        ("* * * * *", "2024-01-01T00:00:30", ["2024-01-01T00:01", "2024-01-01T00:02"]),
        ("*/15 * * * *", "2024-01-01T00:00:00", ["2024-01-01T00:15", "2024-01-01T00:30"]),
        ("5/20 * * * *", "2024-01-01T00:00:00", ["2024-01-01T00:05", "2024-01-01T00:25"]),
        ("0 9-17/4 * * *", "2024-01-01T10:00:00", ["2024-01-01T13:00", "2024-01-01T17:00"]),
        ("0 0 * * mon-fri", "2024-01-05T12:00:00", ["2024-01-08T00:00", "2024-01-09T00:00"]),  # Fri → Mon
        ("0 0 1 jan,JUL *", "2024-02-01T00:00:00", ["2024-07-01T00:00", "2025-01-01T00:00"]),
        ("0 0 13 * 5", "2024-01-01T00:00:00", ["2024-01-05T00:00", "2024-01-12T00:00"]),  # 13th OR Friday
        ("0 0 29 2 *", "2024-03-01T00:00:00", ["2028-02-29T00:00"]),
        ("@hourly", "2024-01-01T00:59:59", ["2024-01-01T01:00", "2024-01-01T02:00"]),
        ("@daily", "2024-01-01T00:00:00", ["2024-01-02T00:00"]),
        ("@weekly", "2024-01-01T00:00:00", ["2024-01-07T00:00"]),  # Sundays
        ("@monthly", "2024-01-15T00:00:00", ["2024-02-01T00:00"]),
        ("@yearly", "2024-01-15T00:00:00", ["2025-01-01T00:00"]),
        ("0 12 ? * 0", "2024-01-01T00:00:00", ["2024-01-07T12:00"]),
    ],
)
def test_next_runs(schedule: str, start: str, expected: list[str]) -> None:
    assert runs(schedule, start, len(expected)) == expected


def test_every_counts_elapsed_seconds() -> None:
    sched = parse_schedule("@every 1h30m")
    assert sched.next_after(at("2024-01-01T00:00:10.5")) == at("2024-01-01T01:30:10")


def test_time_zone_wall_clock_and_daylight_saving() -> None:
    # 09:00 in Berlin is 08:00 UTC in winter, 07:00 UTC in summer
    assert runs("0 9 * * *", "2024-03-30T12:00:00", 2, "Europe/Berlin") == [
        "2024-03-31T07:00",
        "2024-04-01T07:00",
    ]
    # 02:30 does not exist on 2024-03-31 in Berlin (clocks jump 02:00 → 03:00): skipped that day
    assert runs("30 2 * * *", "2024-03-30T12:00:00", 2, "Europe/Berlin") == [
        "2024-04-01T00:30",
        "2024-04-02T00:30",
    ]
    # 02:30 happens twice on 2024-10-27 in Berlin: runs once, at the first (00:30 UTC)
    assert runs("30 2 * * *", "2024-10-26T12:00:00", 2, "Europe/Berlin") == [
        "2024-10-27T00:30",
        "2024-10-28T01:30",
    ]


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("", "empty schedule"),
        ("* * * *", "expected exactly 5 fields"),
        ("60 * * * *", "minute field: 60 is above the maximum 59"),
        ("* 24 * * *", "hour field: 24 is above the maximum 23"),
        ("* * 0 * *", "day of month field: 0 is below the minimum 1"),
        ("* * * 13 *", "month field: 13 is above the maximum 12"),
        ("* * * * 7", "day of week field: 7 is above the maximum 6"),
        ("5-1 * * * *", "starts after it ends"),
        ("*/0 * * * *", 'step of "*/0" must be a positive number'),
        ("* * * foo *", '"foo" is not a number or a name (jan'),
        ("@fortnightly", "unrecognized descriptor"),
        ("@every 0s", "at least 1s"),
        ("@every soon", "invalid duration"),
        ("TZ=UTC 0 * * * *", "use the timeZone field"),
        ("0 0 30 2 *", "never runs"),
    ],
)
def test_invalid_schedules_say_what_is_valid(schedule: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=None) as exc:
        parse_schedule(schedule)
    assert message in str(exc.value)


@pytest.mark.parametrize("name", ["", "Local", "Mars/Olympus", "../etc/passwd", "/etc/localtime"])
def test_invalid_time_zones(name: str) -> None:
    with pytest.raises(ScheduleError):
        zone(name)


def test_most_recent_unmet_time() -> None:
    sched = parse_schedule("*/10 * * * *")
    now = at("2024-01-01T01:05:00")
    recent = most_recent(sched, UTC, at("2024-01-01T00:31:00"), now)
    assert recent.time == at("2024-01-01T01:00:00") and not recent.too_many_missed
    assert most_recent(sched, UTC, at("2024-01-01T01:00:00"), now).time is None


def test_more_than_100_missed_is_flagged_and_the_latest_still_found() -> None:
    sched = parse_schedule("* * * * *")
    now = at("2024-01-02T00:00:30")
    recent = most_recent(sched, UTC, at("2024-01-01T00:00:00"), now)
    assert recent.too_many_missed and recent.time == at("2024-01-02T00:00:00")
    # exactly 100 missed is not "too many"
    recent = most_recent(sched, UTC, at("2024-01-01T00:00:00"), at("2024-01-01T01:40:00"))
    assert recent.time == at("2024-01-01T01:40:00") and not recent.too_many_missed


def test_irregular_intervals_lose_no_run() -> None:
    # Fri and Mon only: the first gap (3 days) overestimates the next (4 days)
    sched = parse_schedule("0 9 * * 1,5")
    earliest = at("2024-01-05T08:00:00")  # a Friday
    recent = most_recent(sched, UTC, earliest, at("2024-01-11T21:00:00"))  # Thursday
    assert recent.time == at("2024-01-08T09:00:00")  # Monday's run


def test_starting_deadline_moves_the_earliest_time() -> None:
    now = at("2024-01-01T12:00:00")
    created = at("2024-01-01T00:00:00")
    assert earliest_time(None, created, now, None) == created
    assert earliest_time(None, created, now, 600) == now - timedelta(seconds=600)
    assert earliest_time(at("2024-01-01T11:59:00"), created, now, 600) == at("2024-01-01T11:59:00")


def test_next_wakeup_is_just_after_the_next_time() -> None:
    wake = next_wakeup(parse_schedule("0 * * * *"), UTC, at("2024-01-01T00:30:00"))
    assert wake == at("2024-01-01T01:00:00") + timedelta(milliseconds=100)
