"""Cron schedules: the standard 5-field syntax batch/v1 CronJob accepts, parsed and stepped. Pure.

    schedule = parse_schedule("*/15 9-17 * * mon-fri")
    schedule.next_after(datetime(2024, 1, 1, tzinfo=UTC), zone("Europe/Berlin"))

The grammar is the one kube-controller-manager's CronJob controller parses (robfig/cron's
`ParseStandard`): five fields — minute (0-59), hour (0-23), day of month (1-31), month (1-12 or
jan-dec), day of week (0-6 or sun-sat) — each a `*` (or `?`), a number or name, a range `a-b`, a
step `*/n`, `a-b/n` or `a/n` (from a to the field's maximum), or a comma list of those; names are
case-insensitive. Descriptors: `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily`
(`@midnight`), `@hourly`, and `@every <duration>` (Go durations such as `1h30m`, at least 1s).
When both day fields are restricted a day matches either (Vixie cron, robfig); when one is `*`
only the other counts. `TZ=`/`CRON_TZ=` prefixes are refused: the time zone is the `timeZone`
field (as batch/v1 has refused them since Kubernetes 1.27) — except in KubeDL's Cron, whose
controller parses with robfig/cron v3 directly and so takes its zone from that prefix
(`split_zone_prefix`).

Time zones: the schedule runs on the wall clock of its zone (`zoneinfo`). A wall time the zone
skips (the hour lost when daylight saving starts) does not occur, so a run at that time is
skipped that day; a wall time that occurs twice (the hour repeated when it ends) runs once, at
the first occurrence. `@every` counts elapsed time, not wall time.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kubetrain.api.errors import QUOTE

MINUTE, HOUR, DOM, MONTH, DOW = range(5)
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_FIELD_NAMES = ("minute", "hour", "day of month", "month", "day of week")
_MONTHS = {n.lower(): i for i, n in enumerate(calendar.month_abbr) if n}
_DAYS = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_NAMES: tuple[dict[str, int], ...] = ({}, {}, {}, _MONTHS, _DAYS)
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# The search for the next run gives up after this long: a schedule that matches no date (the 30th
# of February) is refused by validation; a stored one makes next_after return None.
SEARCH_YEARS = 5


class ScheduleError(ValueError):
    """Why a schedule string is not a valid cron schedule (the message says what is valid)."""


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: the allowed values of each field, or a fixed interval (`@every`)."""

    text: str
    fields: tuple[frozenset[int], ...] = ()
    dom_star: bool = True  # the day-of-month field was `*`/`?` (then only day of week counts)
    dow_star: bool = True
    every: timedelta | None = None

    def matches_day(self, day: datetime) -> bool:
        dom = day.day in self.fields[DOM]
        dow = (day.isoweekday() % 7) in self.fields[DOW]
        if self.dom_star or self.dow_star:
            return dom and dow
        return dom or dow

    def next_after(self, after: datetime, zone: tzinfo = UTC) -> datetime | None:
        """The first run strictly after `after` (timezone-aware), in UTC; None when the schedule
        matches no time in the next SEARCH_YEARS years."""
        if self.every is not None:
            # robfig's ConstantDelaySchedule: whole seconds after `after`, rounded down.
            start = after.astimezone(UTC).replace(microsecond=0)
            return start + self.every
        local = after.astimezone(zone)
        wall = local.replace(tzinfo=None, second=0, microsecond=0) + timedelta(minutes=1)
        limit = wall + timedelta(days=366 * SEARCH_YEARS)
        minutes, hours, months = self.fields[MINUTE], self.fields[HOUR], self.fields[MONTH]
        while wall <= limit:
            if wall.month not in months:
                year, month = (wall.year + 1, 1) if wall.month == 12 else (wall.year, wall.month + 1)
                wall = datetime(year, month, 1)
                continue
            if not self.matches_day(wall):
                wall = datetime(wall.year, wall.month, wall.day) + timedelta(days=1)
                continue
            if wall.hour not in hours:
                wall = wall.replace(minute=0) + timedelta(hours=1)
                continue
            if wall.minute not in minutes:
                wall += timedelta(minutes=1)
                continue
            when = _existing(wall, zone)
            if when is not None and when > after:
                return when.astimezone(UTC)
            wall += timedelta(minutes=1)
        return None


def _existing(wall: datetime, zone: tzinfo) -> datetime | None:
    """The first instant whose wall time in `zone` is `wall`; None when the zone skips it."""
    aware = wall.replace(tzinfo=zone, fold=0)
    back = aware.astimezone(UTC).astimezone(zone)
    if back.replace(tzinfo=None) != wall:
        return None  # in a gap (daylight saving starts): this wall time never happens
    return aware


def parse_schedule(text: str) -> Schedule:
    """Parse a schedule; ScheduleError says what is wrong."""
    if not isinstance(text, str):
        raise ScheduleError("must be a string")
    spec = text.strip()
    if not spec:
        raise ScheduleError("empty schedule: five fields (minute hour day-of-month month day-of-week)")
    if "TZ" in spec:
        raise ScheduleError("cannot use TZ or CRON_TZ in schedule, use the timeZone field instead")
    if spec.startswith("@"):
        lowered = spec.lower()
        if lowered.startswith("@every"):
            rest = spec[len("@every") :].strip()
            return Schedule(text, every=_every(rest))
        if lowered not in DESCRIPTORS:
            raise ScheduleError(
                f"unrecognized descriptor {QUOTE.encode(spec)}: use one of {', '.join(DESCRIPTORS)} or "
                "@every <duration>"
            )
        spec = DESCRIPTORS[lowered]
    parts = spec.split()
    if len(parts) != 5:
        raise ScheduleError(
            f"expected exactly 5 fields (minute hour day-of-month month day-of-week), found {len(parts)}"
        )
    fields: list[frozenset[int]] = []
    stars: list[bool] = []
    for index, part in enumerate(parts):
        values, star = _field(part, index)
        fields.append(values)
        stars.append(star)
    schedule = Schedule(text, tuple(fields), dom_star=stars[DOM], dow_star=stars[DOW])
    if not _some_day(schedule):
        raise ScheduleError(
            "never runs: no month of the schedule has such a day of month (e.g. the 30th of February)"
        )
    return schedule


def _some_day(schedule: Schedule) -> bool:
    """Whether some date matches the day and month fields (only day of month can rule all out)."""
    if not schedule.dow_star and not schedule.dom_star:
        return True  # either day field may match: every week has its weekdays
    if not schedule.dow_star:
        return True
    longest = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}
    return any(day <= longest[m] for m in schedule.fields[MONTH] for day in schedule.fields[DOM])


def _every(text: str) -> timedelta:
    seconds = _go_duration(text)
    if seconds < 1:
        raise ScheduleError(
            f"@every needs a duration of at least 1s (such as 90s, 1h30m), not {QUOTE.encode(text)}"
        )
    # robfig rounds an @every interval down to whole seconds
    return timedelta(seconds=int(seconds))


def _go_duration(text: str) -> float:
    """A Go `time.ParseDuration` string ("1h30m", "90s", "1.5h") in seconds."""
    if not text:
        raise ScheduleError("@every needs a duration such as 1h30m")
    total, pos = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ScheduleError(
            f"invalid duration {QUOTE.encode(text)} for @every: use units h, m, s, ms (such as 1h30m)"
        )
    return total


def _field(text: str, index: int) -> tuple[frozenset[int], bool]:
    """The values a field allows, and whether it is a bare `*`/`?` (step 1)."""
    values: set[int] = set()
    star = False
    for item in text.split(","):
        more, item_star = _range(item, index)
        values |= more
        star = star or item_star
    return frozenset(values), star


def _range(text: str, index: int) -> tuple[set[int], bool]:
    low, high = _BOUNDS[index]
    name = _FIELD_NAMES[index]
    range_part, slash, step_part = text.partition("/")
    star = False
    if range_part in ("*", "?"):
        start, end, star = low, high, True
    else:
        bounds = range_part.split("-")
        if len(bounds) > 2 or not all(bounds):
            raise ScheduleError(
                f"{name} field: {QUOTE.encode(text)} is not a number, name, range a-b or step"
            )
        start = _number(bounds[0], index)
        end = _number(bounds[1], index) if len(bounds) == 2 else start
        if slash and len(bounds) == 1:
            end = high  # "a/n": from a to the field's maximum
    step = 1
    if slash:
        if not step_part.isdigit() or int(step_part) < 1:
            raise ScheduleError(f"{name} field: the step of {QUOTE.encode(text)} must be a positive number")
        step = int(step_part)
        if step > 1:
            star = False
    if start < low:
        raise ScheduleError(f"{name} field: {start} is below the minimum {low} (in {QUOTE.encode(text)})")
    if end > high:
        raise ScheduleError(f"{name} field: {end} is above the maximum {high} (in {QUOTE.encode(text)})")
    if start > end:
        raise ScheduleError(f"{name} field: the range {QUOTE.encode(text)} starts after it ends")
    return set(range(start, end + 1, step)), star


def _number(text: str, index: int) -> int:
    names = _NAMES[index]
    if text.lower() in names:
        return names[text.lower()]
    if text.isdigit():
        return int(text)
    valid = f" or a name ({', '.join(names)})" if names else ""
    raise ScheduleError(f"{_FIELD_NAMES[index]} field: {QUOTE.encode(text)} is not a number{valid}")


ZONE_PREFIXES = ("TZ=", "CRON_TZ=")


def split_zone_prefix(text: str) -> tuple[str, str | None]:
    """A schedule with robfig/cron v3's leading `TZ=<zone> ` or `CRON_TZ=<zone> ` (`Parser.Parse`:
    the zone name runs from the `=` to the first space): (the schedule after it, the zone name),
    or (`text`, None) without that prefix. KubeDL's Cron takes its time zone this way."""
    spec = text.lstrip()
    if not spec.startswith(ZONE_PREFIXES):
        return text, None
    head, _, rest = spec.partition(" ")
    return rest.strip(), head.split("=", 1)[1]


def zone(name: str | None) -> tzinfo:
    """The time zone of a `timeZone` field (None or absent: UTC). ScheduleError for an unknown one."""
    if name is None:
        return UTC
    if not isinstance(name, str) or not name:
        raise ScheduleError("must be a time zone name such as Europe/Berlin, or left out for UTC")
    if name.lower() == "local" or name.startswith("/") or ".." in name or " " in name:
        raise ScheduleError(
            f"{QUOTE.encode(name)}: must be an explicit IANA time zone name such as Europe/Berlin"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(
            f"unknown time zone {QUOTE.encode(name)}: use an IANA name (tz database) such as Etc/UTC or "
            "America/New_York"
        ) from None
