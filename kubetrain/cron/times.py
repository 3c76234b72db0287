"""When a cron should have started a job: batch/v1 CronJob's schedule arithmetic. Pure.

`most_recent(...)` is kube-controller-manager's `mostRecentScheduleTime`: the latest scheduled
time after the cron's last one (or its creation) that is not after `now`, and whether more than
100 were missed in between (the "too many missed start times" rule: a Warning event, and the most
recent one still starts, as the CronJob controller does). With `startingDeadlineSeconds` set,
times older than the deadline are not counted. Unlike the controller's estimate from the first
two intervals, the search here is exact for schedules whose intervals vary (weekdays only, a list
of days), so a run is never lost to an overshooting estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from kubetrain.cron.schedule import Schedule

TOO_MANY_MISSED = 100
# The wake-up after a scheduled time comes this much later (the CronJob controller's
# nextScheduleDelta): a clock a little behind still sees the time as come.
NEXT_SCHEDULE_DELTA = timedelta(milliseconds=100)
_WINDOWS = (
    timedelta(days=1),
    timedelta(days=8),
    timedelta(days=32),
    timedelta(days=367),
    timedelta(days=1830),
)


@dataclass(frozen=True)
class Recent:
    time: datetime | None  # the most recent unmet scheduled time, None when none has come
    too_many_missed: bool = False


def earliest_time(
    last_schedule: datetime | None,
    created: datetime | None,
    now: datetime,
    starting_deadline_seconds: int | None,
) -> datetime:
    """From when scheduled times count: the last scheduled time, else the cron's creation, moved
    up to `now - startingDeadlineSeconds` (nothing older may start any more)."""
    earliest = last_schedule or created or now
    if starting_deadline_seconds is not None:
        deadline = now - timedelta(seconds=starting_deadline_seconds)
        if deadline > earliest:
            earliest = deadline
    return earliest


def most_recent(schedule: Schedule, zone: tzinfo, earliest: datetime, now: datetime) -> Recent:
    """The latest scheduled time in (earliest, now], and whether over 100 fell in that span."""
    latest: datetime | None = None
    t = schedule.next_after(earliest, zone)
    for _ in range(TOO_MANY_MISSED + 1):
        if t is None or t > now:
            return Recent(latest)
        latest = t
        t = schedule.next_after(t, zone)
    if t is None or t > now:
        return Recent(latest)
    # More than 100 missed: find the latest by searching back from now in growing windows.
    gap = t - latest if latest is not None else timedelta(minutes=1)
    for window in (2 * gap, *_WINDOWS):
        start = max(now - window, earliest)
        found = _last_before(schedule, zone, start, now)
        if found is not None:
            return Recent(found, too_many_missed=True)
    return Recent(latest, too_many_missed=True)


def _last_before(schedule: Schedule, zone: tzinfo, start: datetime, now: datetime) -> datetime | None:
    last: datetime | None = None
    t = schedule.next_after(start, zone)
    while t is not None and t <= now:
        last = t
        t = schedule.next_after(t, zone)
    return last


def next_wakeup(schedule: Schedule, zone: tzinfo, now: datetime) -> datetime | None:
    """When to look again: the next scheduled time after `now`, plus NEXT_SCHEDULE_DELTA."""
    t = schedule.next_after(now, zone)
    return None if t is None else t + NEXT_SCHEDULE_DELTA
