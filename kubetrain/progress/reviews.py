"""TokenReview answers cached per (token, audience), so steady reporting costs no API call.

- A positive answer is used for `ttl` seconds (default 300) but never past the token's own
  expiry (its unverified `exp` claim, read only to shorten the cache), and is refreshed in the
  background once older than `refresh_after` (60): a steady reporter never waits for a
  TokenReview after its first report, and a token the API server stops accepting is refused
  within about a minute.
- A refusal is cached `negative_ttl` seconds (10), so a flood of bad tokens is not a flood of
  TokenReviews.
- At most `size` entries (20,000), the oldest dropped first. Tokens are kept as SHA-256 digests.

What the cache does not decide: the token's pod is checked on every report (authz.py), so a
deleted, replaced or terminating pod is refused at once whatever the cache holds.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from kubetrain.kube.clock import Clock

TTL = 300.0
REFRESH_AFTER = 60.0
NEGATIVE_TTL = 10.0
SIZE = 20000


def token_expiry(token: str) -> float | None:
    """The `exp` claim (epoch seconds) of a JWT, unverified; None when it is not a JWT."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        exp = claims.get("exp") if isinstance(claims, dict) else None
    except (IndexError, ValueError, UnicodeDecodeError):
        return None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


@dataclass
class _Entry:
    status: dict[str, Any]
    expires: float  # monotonic
    refresh: float  # monotonic


class ReviewCache:
    def __init__(
        self,
        clock: Clock,
        *,
        ttl: float = TTL,
        refresh_after: float = REFRESH_AFTER,
        negative_ttl: float = NEGATIVE_TTL,
        size: int = SIZE,
    ) -> None:
        self.clock = clock
        self.ttl, self.refresh_after, self.negative_ttl, self.size = ttl, refresh_after, negative_ttl, size
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()

    @staticmethod
    def key(token: str, audience: str) -> tuple[str, str]:
        return hashlib.sha256(token.encode()).hexdigest(), audience

    def get(self, token: str, audience: str) -> tuple[dict[str, Any], bool] | None:
        """(the cached answer, whether it is due for a refresh), or None when there is none."""
        key = self.key(token, audience)
        entry = self._entries.get(key)
        now = self.clock.monotonic()
        if entry is None or entry.expires <= now:
            self._entries.pop(key, None)
            return None
        return entry.status, entry.refresh <= now

    def put(self, token: str, audience: str, status: dict[str, Any]) -> None:
        now = self.clock.monotonic()
        if status.get("authenticated"):
            ttl = self.ttl
            exp = token_expiry(token)
            if exp is not None:
                ttl = min(ttl, exp - self.clock.now().timestamp())
            entry = _Entry(status, now + max(0.0, ttl), now + min(self.refresh_after, max(0.0, ttl)))
        else:
            entry = _Entry(status, now + self.negative_ttl, now + self.negative_ttl)
        key = self.key(token, audience)
        self._entries.pop(key, None)
        self._entries[key] = entry
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
