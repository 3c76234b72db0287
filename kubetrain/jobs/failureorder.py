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

A rule applies to a Job by its replicated job (every failure of kubetrain's Jobs has the same
reason and message), so `FailureOrder` keeps the failed Jobs per replicated job, each in failure
order: the first Job among some replicated jobs, and taking it away, cost one look per
replicated job however many Jobs failed — a reconcile that acts on many failed Jobs one after
the other stays linear.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class FailedJob:
    """A batch Job past its backoff limit: group (replicated job), Job index, and when it failed
    (its `Failed` condition's time)."""

    group: str
    index: int
    failed_at: datetime

    @property
    def second(self) -> datetime:
        """The failure time as `metav1.Time` keeps it: to the second."""
        return self.failed_at.replace(microsecond=0)


class FailureOrder:
    """Failed Jobs (given in list order) in JobSet's order: by failure time to the second, ties
    in list order; per group, a queue of (place in that order, Job)."""

    def __init__(self, failed: Iterable[FailedJob]) -> None:
        ordered = sorted(failed, key=lambda job: job.second)  # stable: a tie keeps the list order
        self._queues: dict[str, deque[tuple[int, FailedJob]]] = {}
        for place, job in enumerate(ordered):
            self._queues.setdefault(job.group, deque()).append((place, job))

    def __bool__(self) -> bool:
        return bool(self._queues)

    @property
    def groups(self) -> list[str]:
        """The groups with a failed Job left."""
        return list(self._queues)

    def first(self, groups: Collection[str] | None = None) -> FailedJob | None:
        """The Job that failed first (of those in `groups` when given); None: no such Job."""
        best: tuple[int, FailedJob] | None = None
        for group, queue in self._queues.items():
            if (groups is None or group in groups) and (best is None or queue[0][0] < best[0]):
                best = queue[0]
        return best[1] if best is not None else None

    def take(self, group: str, index: int) -> None:
        """Take away Job `index` of `group`, the first of its group (as `first` picks it)."""
        queue = self._queues.get(group)
        if not queue or queue[0][1].index != index:
            raise ValueError(f"Job {index} of {group} is not the first failed Job of its group")
        queue.popleft()
        if not queue:
            del self._queues[group]
