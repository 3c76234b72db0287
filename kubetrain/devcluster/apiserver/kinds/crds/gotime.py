"""Go's `time.Parse(time.RFC3339, s)` as metav1.Time's UnmarshalJSON calls it: the instant, or
the `*time.ParseError` text (Go time/format.go `parse`, walking the layout
`2006-01-02T15:04:05Z07:00` element by element; `getnum`, `atoi`, `parseNanoseconds`).

```python
parse_rfc3339("2024-05-01T10:00:00+02:00")   # (2024, 5, 1, 8, 0, 0) in UTC
parse_rfc3339("2024-13-01T00:00:00Z")        # GoTimeError('parsing time "..." : month out of range')
format_rfc3339((2024, 5, 1, 8, 0, 0))        # "2024-05-01T08:00:00Z" (Time.MarshalJSON: UTC, seconds)
```
Go accepts a fractional second after the seconds even though the layout has none, a one- or
two-digit hour, and checks the day against the month after the whole value is read. Instants
outside years 1-9999 are not converted to UTC (Python's datetime has no year 0).
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta, timezone

LAYOUT = "2006-01-02T15:04:05Z07:00"
ZERO = (1, 1, 1, 0, 0, 0)  # time.Time{}: what IsZero reports


class GoTimeError(ValueError):
    """A `*time.ParseError`; str() is its Error()."""


def quote(s: str) -> str:
    """time's own `quote`: printable ASCII kept (`"` and `\\` escaped), other bytes as `\\xNN`."""
    out = ['"']
    for ch in s:
        if ch >= "\x80" or ch < " ":
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + ch if ch in '"\\' else ch)
    return "".join(out) + '"'


def _error(value: str, layout_elem: str, value_elem: str, message: str = "") -> GoTimeError:
    if message:
        return GoTimeError(f"parsing time {quote(value)}{message}")
    elems = f"cannot parse {quote(value_elem)} as {quote(layout_elem)}"
    return GoTimeError(f"parsing time {quote(value)} as {quote(LAYOUT)}: {elems}")


def _digit(s: str, i: int) -> bool:
    return len(s) > i and "0" <= s[i] <= "9"


def _getnum(s: str, fixed: bool) -> tuple[int, str] | None:
    if not _digit(s, 0):
        return None
    if not _digit(s, 1):
        return None if fixed else (int(s[0]), s[1:])
    return int(s[:2]), s[2:]


def _atoi(s: str) -> int | None:
    body = s[1:] if s[:1] in ("-", "+") else s
    if not body or not body.isascii() or not body.isdigit():
        return None
    return -int(body) if s[:1] == "-" else int(body)


def parse_rfc3339(value: str) -> tuple[int, int, int, int, int, int]:
    """The instant `value` names, in UTC (year, month, day, hour, minute, second), or raise."""
    rest = value
    fields: list[int] = []
    # (layout element, fixed width, range check) for the numeric elements, between literals
    steps: list[tuple[str, str]] = [
        ("2006", ""), ("-", ""), ("01", "month"), ("-", ""), ("02", ""), ("T", ""),
        ("15", "hour"), (":", ""), ("04", "minute"), (":", ""), ("05", "second"),
    ]  # fmt: skip
    for elem, range_name in steps:
        hold = rest
        if not elem[0].isdigit():
            if not rest.startswith(elem):
                raise _error(value, elem, rest)
            rest = rest[len(elem) :]
            continue
        if elem == "2006":
            year = _atoi(rest[:4]) if len(rest) >= 4 and _digit(rest, 0) else None
            if year is None:
                raise _error(value, elem, hold)
            fields.append(year)
            rest = rest[4:]
            continue
        got = _getnum(rest, fixed=elem != "15")
        if got is None:
            raise _error(value, elem, hold)
        n, rest = got
        limit = {"month": 13, "hour": 24, "minute": 60, "second": 60}.get(range_name)
        if (range_name == "month" and n < 1) or (limit is not None and n >= limit):
            raise _error(value, elem, rest, f": {range_name} out of range")
        fields.append(n)
        if elem == "05" and len(rest) >= 2 and rest[0] in ".," and _digit(rest, 1):
            n_end = 2
            while _digit(rest, n_end):
                n_end += 1
            rest = rest[n_end:]  # fractional seconds: read, and dropped by MarshalJSON
    offset = _zone(value, rest)
    rest = rest[1:] if rest.startswith("Z") else rest[6:]
    if rest:
        raise _error(value, "", rest, f": extra text: {quote(rest)}")
    year, month, day, hour, minute, second = fields
    if day < 1 or day > _days_in(month, year):
        raise _error(value, "", rest, ": day out of range")
    if offset == 0 or not 1 <= year <= 9999:
        return year, month, day, hour, minute, second
    try:
        at = datetime(year, month, day, hour, minute, second, tzinfo=timezone(timedelta(minutes=offset)))
        u = at.astimezone(UTC)
    except (ValueError, OverflowError):
        return year, month, day, hour, minute, second
    return u.year, u.month, u.day, u.hour, u.minute, u.second


def _zone(value: str, rest: str) -> int:
    """The `Z07:00` element: `Z`, or `±hh:mm` (minutes east of UTC)."""
    if rest.startswith("Z"):
        return 0
    bad = _error(value, "Z07:00", rest)
    if len(rest) < 6 or rest[3] != ":":
        raise bad
    hours, minutes = _getnum(rest[1:3], True), _getnum(rest[4:6], True)
    if hours is None or minutes is None:
        raise bad
    if minutes[0] > 60:  # checked before the sign; the later range check wins
        raise _error(value, "Z07:00", rest[6:], ": time zone offset minute out of range")
    if hours[0] > 24:
        raise _error(value, "Z07:00", rest[6:], ": time zone offset hour out of range")
    if rest[0] not in "+-":
        raise bad
    total = hours[0] * 60 + minutes[0]
    return -total if rest[0] == "-" else total


def _days_in(month: int, year: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return calendar.monthrange(2001, month)[1]


def format_rfc3339(t: tuple[int, int, int, int, int, int]) -> str:
    year, month, day, hour, minute, second = t
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"
