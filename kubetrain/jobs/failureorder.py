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
"""

from __future__ import annotations

from collections.abc import Sequence
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


def first_failed(failed: Sequence[FailedJob]) -> FailedJob | None:
    """The Job among `failed` that failed first; on equal times (to the second) the earlier in
    `failed`. None when `failed` is empty."""
    picked: FailedJob | None = None
    for job in failed:
        if picked is None or job.second < picked.second:
            picked = job
    return picked
