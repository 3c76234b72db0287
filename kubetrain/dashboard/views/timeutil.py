"""RFC 3339 timestamps as the API server writes them <-> epoch seconds, and short durations."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


def parse_time(value: object) -> float | None:
    """Epoch seconds of `2026-01-02T03:04:05Z` (fractions and offsets allowed); None otherwise."""
    if not isinstance(value, str) or not value:
        return None
    return _parse(value)


@lru_cache(maxsize=65536)  # a job's pods share a handful of timestamps; parsing dominated the page
def _parse(value: str) -> float | None:
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def format_time(epoch: float | None) -> str:
    """`2026-01-02 03:04:05Z` (UTC), or an empty string."""
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def format_stamp(value: object) -> str:
    """A Kubernetes timestamp (`2026-01-02T03:04:05Z`) as `format_time` prints it, so every time on
    a page reads alike; a value that is no timestamp is shown as it is."""
    epoch = parse_time(value)
    return format_time(epoch) if epoch is not None else ("" if value is None else str(value))


def iso_time(epoch: float | None) -> str:
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def short_duration(seconds: float | None) -> str:
    """`45s`, `3m20s`, `2h05m`, `3d4h` — as kubectl prints ages."""
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"
