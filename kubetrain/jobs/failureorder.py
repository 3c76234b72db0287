"""Which failed batch Job a whole-gang failure policy acts on when several have failed — pure.

JobSet (its failure_policy.go, `findFirstFailedJob` and `findFirstFailedPolicyRuleAndJob`)
orders failed Jobs by their `Failed` condition's `lastTransitionTime`: for each rule in order,
the Job the rule applies to that failed first; without a matching rule (or without a policy),
the Job that failed first. A Job replaces the one picked so far only when it failed strictly
earlier (`Time.Before`), so on equal times the one listed first keeps the pick. Times compare
at the second: `metav1.Time` is written and read as RFC 3339 without fractions, so two Jobs
that failed within the same second tie. kubetrain lists failed Jobs in the runtime's
replicated-job order, then by Job index (the order JobSet creates them) — JobSet's own list
comes from its informer cache, in no order it specifies; kubetrain's is the deterministic one.

A rule applies to a Job by its replicated job and its failure's reason and message
(`BackoffLimitExceeded`, the same for every Job, or `PodFailurePolicy` with the matched pod's
message), so `FailureOrder` keeps the failed Jobs per (replicated job, reason, message), each in
failure order: the first Job a rule applies to, and taking it away, cost one look per such
key however many Jobs failed — a reconcile that acts on many Jobs past their backoff limit one
after the other stays linear.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"  # batch/v1 JobReasonBackoffLimitExceeded
BACKOFF_LIMIT_MESSAGE = "Job has reached the specified backoff limit"  # the Job controller's


@dataclass(frozen=True, slots=True)
class FailedJob:
    """A failed batch Job: group (replicated job), Job index, when it failed (its `Failed`
    condition's time), and that condition's reason and message."""

    group: str
    index: int
    failed_at: datetime
    reason: str = BACKOFF_LIMIT_EXCEEDED
    message: str = BACKOFF_LIMIT_MESSAGE

    @property
    def second(self) -> datetime:
        """The failure time as `metav1.Time` keeps it: to the second."""
        return self.failed_at.replace(microsecond=0)


class FailureOrder:
    """Failed Jobs (given in list order) in JobSet's order: by failure time to the second, ties
    in list order; per (group, reason, message), a queue of (place in that order, Job)."""

    def __init__(self, failed: Iterable[FailedJob]) -> None:
        ordered = sorted(failed, key=lambda job: job.second)  # stable: a tie keeps the list order
        self._queues: dict[tuple[str, str, str], deque[tuple[int, FailedJob]]] = {}
        for place, job in enumerate(ordered):
            self._queues.setdefault((job.group, job.reason, job.message), deque()).append((place, job))

    def __bool__(self) -> bool:
        return bool(self._queues)

    @property
    def groups(self) -> list[str]:
        """The groups with a failed Job left."""
        return list(dict.fromkeys(key[0] for key in self._queues))

    def first(
        self, groups: Collection[str] | None = None, applies: Callable[[FailedJob], bool] | None = None
    ) -> FailedJob | None:
        """The Job that failed first (of those in `groups` when given, and of those `applies` to:
        asked of one Job per group, reason and message); None: no such Job."""
        best: tuple[int, FailedJob] | None = None
        for (group, _, _), queue in self._queues.items():
            head = queue[0]
            if groups is not None and group not in groups:
                continue
            if (best is None or head[0] < best[0]) and (applies is None or applies(head[1])):
                best = head
        return best[1] if best is not None else None

    def take(self, group: str, index: int) -> None:
        """Take away Job `index` of `group`, the first of its group with its reason and message
        (as `first` picks it)."""
        for key, queue in self._queues.items():
            if key[0] == group and queue[0][1].index == index:
                queue.popleft()
                if not queue:
                    del self._queues[key]
                return
        raise ValueError(f"Job {index} of {group} is not the first failed Job of its group")
