"""metav1.Time as Kubernetes writes it: RFC 3339 (`2024-01-01T00:00:00Z`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime (one without an offset read as UTC), or None
    when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
