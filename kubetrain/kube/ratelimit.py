"""Client-side request rate limiting: a token bucket with `qps` and `burst`.

`TokenBucket(qps, burst)` starts full (`burst` tokens) and refills at `qps` tokens per second,
never above `burst`. `acquire()` takes one token; when none is left it *reserves* the next one
and sleeps until it is due — like Go's `rate.Limiter.Wait`. Reservations are computed up front,
so concurrent callers wait in parallel, each for its own slot: the limiter bounds the request
rate without serialising requests (a burst of N concurrent calls with tokens available all
proceed at once). `qps <= 0` disables limiting.
"""

from __future__ import annotations

from kubetrain.kube.clock import SYSTEM_CLOCK, Clock


class TokenBucket:
    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be at least 1 when qps > 0 (got burst={burst})")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock or SYSTEM_CLOCK
        self._tokens = float(burst)
        self._last = self._clock.monotonic()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def reserve(self) -> float:
        """Take one token now (possibly going into debt) and return how many seconds the caller
        must wait before using it (0 when a token was available)."""
        if self.unlimited:
            return 0.0
        now = self._clock.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    async def acquire(self) -> None:
        """Wait until this caller may send one request."""
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)
