"""Per-job admission of reports and coalescing of status writes — decisions on an injected clock.

- Rate limit: each job has a token bucket refilled at `per_pod_rate` reports per second per pod
  of the job (default 0.4: twice what the Kubeflow SDK sends, one report per 5 s per process),
  holding at least `min_burst`; a report over it is answered 429 with the seconds until the
  next token (Retry-After). A pod flooding reports cannot crowd out other jobs: the bucket is
  the job's.
- Coalescing: the latest accepted report of a job replaces any not yet written one; a job's
  `status.trainerStatus` is written at most once per `interval` seconds (default 5). A report
  arriving when the job's last write is older than `interval` is due at once.
- Memory: a job not heard from for `forget_after` seconds is dropped (its bucket refills anyway).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrain.kube.clock import Clock


@dataclass
class JobState:
    tokens: float
    refilled: float
    last_write: float | None = None  # monotonic time of the last write attempt
    pending: dict[str, Any] | None = None  # the trainerStatus waiting to be written
    target: Any = None  # what the writer needs to address the job (opaque here)
    seen: float = 0.0
    failed: bool = False  # the last write failed: reports are answered 503 until one succeeds
    written_once: bool = False


class Coalescer:
    def __init__(
        self,
        clock: Clock,
        *,
        interval: float = 5.0,
        per_pod_rate: float = 0.4,
        min_burst: int = 10,
        forget_after: float = 600.0,
    ) -> None:
        self.clock = clock
        self.interval = interval
        self.per_pod_rate = per_pod_rate
        self.min_burst = min_burst
        self.forget_after = forget_after
        self.jobs: dict[str, JobState] = {}

    def _state(self, key: str, pods: int) -> JobState:
        now = self.clock.monotonic()
        state = self.jobs.get(key)
        if state is None:
            state = self.jobs[key] = JobState(tokens=float(self._burst(pods)), refilled=now)
        state.seen = now
        return state

    def _burst(self, pods: int) -> int:
        return max(self.min_burst, 2 * pods)

    def admit(self, key: str, pods: int) -> float | None:
        """Take one report from the job's bucket: None when allowed, else seconds to wait."""
        state = self._state(key, pods)
        now = self.clock.monotonic()
        rate = max(1, pods) * self.per_pod_rate
        state.tokens = min(float(self._burst(pods)), state.tokens + (now - state.refilled) * rate)
        state.refilled = now
        if state.tokens < 1.0:
            return (1.0 - state.tokens) / rate
        state.tokens -= 1.0
        return None

    def failing(self, key: str) -> bool:
        state = self.jobs.get(key)
        return state is not None and state.failed

    def offer(self, key: str, target: Any, trainer_status: dict[str, Any]) -> None:
        """The job's newest report (replaces one not yet written)."""
        state = self._state(key, 0)
        state.pending = trainer_status
        state.target = target

    def due(self) -> tuple[list[tuple[str, Any, dict[str, Any]]], float | None]:
        """Reports to write now — (key, target, trainerStatus) — and the seconds until the next
        one is due (None: nothing pending). Taken reports are no longer pending."""
        now = self.clock.monotonic()
        out: list[tuple[str, Any, dict[str, Any]]] = []
        wait: float | None = None
        for key, state in list(self.jobs.items()):
            if state.pending is None:
                if now - state.seen > self.forget_after:
                    del self.jobs[key]
                continue
            ready_at = now if state.last_write is None else state.last_write + self.interval
            if ready_at <= now:
                out.append((key, state.target, state.pending))
                state.pending = None
                state.last_write = now
            else:
                wait = ready_at - now if wait is None else min(wait, ready_at - now)
        return out, wait

    def written(self, key: str) -> bool:
        """A report of the job was written by this process before."""
        state = self.jobs.get(key)
        return state is not None and state.written_once

    def result(self, key: str, ok: bool) -> None:
        state = self.jobs.get(key)
        if state is not None:
            state.failed = not ok
            state.written_once = state.written_once or ok
