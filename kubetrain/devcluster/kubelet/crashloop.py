"""The kubelet's crash-loop back-off: when a container that exited runs again. Pure.

It follows Kubernetes 1.36's kubelet:

- The back-off is `flowcontrol.NewBackOff(initial, max)` (k8s.io/client-go
  util/flowcontrol/backoff.go), built by `newCrashLoopBackOff` (pkg/kubelet/kubelet.go). The
  initial delay is 10 s (`initialCrashLoopBackOff`) and the maximum is 300 s. The feature gate
  `KubeletCrashLoopBackOffMax` (KEP-5593) is beta and on by default since 1.35. With it on, the
  maximum comes from the kubelet configuration's `crashLoopBackOff.maxContainerRestartPeriod`,
  which defaults to `MaxContainerBackOff` (300 s), so the maximum stays 300 s.
  `ReduceDefaultCrashLoopBackOffDecay` (KEP-4603: 1 s doubling to 60 s) is still alpha, so it is
  off. `NewBackOff` adds no jitter.
- `doBackOff` (pkg/kubelet/kuberuntime/kuberuntime_manager.go) runs when an exited container is
  to start again. It calls `IsInBackOffSince(key, finishedAt)`. If that holds, the container is
  not started: it waits with reason `CrashLoopBackOff` and the message `back-off <delay>
  restarting failed container=<name> pod=<name>_<namespace>(<uid>)`. The delay is a Go
  duration (`1m20s`, `5m0s`). Otherwise it calls `Next(key, finishedAt)` and starts the
  container. On the first exit there is no entry, so the container restarts at once and the
  entry's 10 s applies to the next exit. After that, each restart doubles the delay, up to 300 s.
- `IsInBackOffSince` holds when an entry exists, has not expired, and less than its delay has
  passed since the exit. An entry expires when the exit came more than 600 s after the entry's
  last update. That is the kubelet's own `HasExpiredFunc`, a flat 600 s whatever the maximum. So
  a container that ran more than 10 minutes after its last restart starts afresh: it restarts at
  once, and the next delay is 10 s again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

INITIAL_SECONDS = 10  # initialCrashLoopBackOff
MAX_SECONDS = 300  # MaxContainerBackOff, the default crashLoopBackOff.maxContainerRestartPeriod
RESET_SECONDS = 600  # the kubelet's HasExpiredFunc: an entry older than this starts afresh
REASON = "CrashLoopBackOff"


def delay_seconds(steps: int) -> int:
    """The back-off delay after `steps` restarts with no reset in between: 10 s after the first
    restart, doubled after each further one, at most 300 s (0 before any restart)."""
    if steps <= 0:
        return 0
    return int(min(MAX_SECONDS, INITIAL_SECONDS * 2 ** min(steps - 1, 16)))


@dataclass(frozen=True)
class BackOff:
    """One container's back-off entry (flowcontrol's backoffEntry): how many restarts it counts
    and when it was last moved on (`Next`)."""

    steps: int
    last_update: datetime

    @property
    def delay(self) -> int:
        return delay_seconds(self.steps)


def expired(entry: BackOff, finished: datetime) -> bool:
    """The kubelet's HasExpiredFunc: the exit came more than 600 s after the last restart."""
    return (finished - entry.last_update).total_seconds() > RESET_SECONDS


def in_back_off(entry: BackOff | None, finished: datetime, now: datetime) -> bool:
    """Backoff.IsInBackOffSince(key, finishedAt): the container that exited at `finished` waits."""
    if entry is None or expired(entry, finished):
        return False
    return (now - finished).total_seconds() < entry.delay


def next_back_off(entry: BackOff | None, finished: datetime, now: datetime) -> BackOff:
    """Backoff.Next(key, finishedAt): the entry once the container that exited at `finished`
    restarts at `now`."""
    if entry is None or expired(entry, finished):
        return BackOff(1, now)
    return BackOff(entry.steps + 1, now)


def go_duration(seconds: int) -> str:
    """Go's time.Duration.String for whole seconds: `10s`, `1m20s`, `5m0s`, `1h0m0s`."""
    if seconds <= 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def message(pod: dict[str, Any], container: str, delay: int) -> str:
    """doBackOff's message, its pod as format.Pod writes it: `name_namespace(uid)`."""
    meta = pod.get("metadata") or {}
    ref = f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"
    return f"back-off {go_duration(delay)} restarting failed container={container} pod={ref}"


def waiting(pod: dict[str, Any], container: str, delay: int) -> dict[str, Any]:
    """The `state` of a container that waits out its back-off."""
    return {"waiting": {"reason": REASON, "message": message(pod, container, delay)}}
