"""Expectations: what the controller has asked the API server to create/delete for each job,
and has not yet seen come back through the informer.

The informer cache lags behind our own writes. Without expectations a reconcile that runs
between "POST pod" and "the watch delivers the pod" sees the pod missing and creates it again
(or deletes twice). Like client-go's `UIDTrackingControllerExpectations`, but tracked by child
*name* (kubetrain child names are deterministic):

    exp = Expectations()
    if not exp.satisfied(job_key):
        return                                     # wait for the informer to catch up
    exp.expect_creations(job_key, ["j-worker-0", "j-worker-1"])
    ... POST each pod; on a failed POST: exp.creation_observed(job_key, name)
    # informer handlers:
    on pod add    -> exp.creation_observed(job_key_of(pod), pod name)
    on pod delete -> exp.deletion_observed(job_key_of(pod), pod name)

Expectations expire `ttl` seconds (default 300, client-go's ExpectationsTimeout) after they
were last raised, so a lost watch event can never wedge a job forever. Time comes from the
injected `Clock`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubetrain.kube.clock import SYSTEM_CLOCK, Clock

DEFAULT_TTL = 300.0


@dataclass
class _Pending:
    creations: set[str] = field(default_factory=set)
    deletions: set[str] = field(default_factory=set)
    since: float = 0.0


class Expectations:
    def __init__(self, *, ttl: float = DEFAULT_TTL, clock: Clock | None = None) -> None:
        self.ttl = ttl
        self._clock = clock or SYSTEM_CLOCK
        self._jobs: dict[str, _Pending] = {}

    def expect_creations(self, key: str, names: Iterable[str]) -> None:
        """Record that children `names` of job `key` are about to be created."""
        self._raise(key, names, deleting=False)

    def expect_deletions(self, key: str, names: Iterable[str]) -> None:
        """Record that children `names` of job `key` are about to be deleted."""
        self._raise(key, names, deleting=True)

    def creation_observed(self, key: str, name: str) -> None:
        """The informer saw child `name` created (or our create of it failed: it will not come)."""
        pending = self._jobs.get(key)
        if pending is not None:
            pending.creations.discard(name)
            self._drop_if_empty(key, pending)

    def deletion_observed(self, key: str, name: str) -> None:
        """The informer saw child `name` deleted (or our delete of it failed)."""
        pending = self._jobs.get(key)
        if pending is not None:
            pending.deletions.discard(name)
            self._drop_if_empty(key, pending)

    def satisfied(self, key: str) -> bool:
        """True when nothing is pending for `key` (or what was pending has expired)."""
        pending = self._jobs.get(key)
        if pending is None:
            return True
        if self._clock.monotonic() - pending.since >= self.ttl:
            del self._jobs[key]
            return True
        return False

    def pending(self, key: str) -> tuple[frozenset[str], frozenset[str]]:
        """(names still expected to be created, names still expected to be deleted)."""
        pending = self._jobs.get(key)
        if pending is None:
            return frozenset(), frozenset()
        return frozenset(pending.creations), frozenset(pending.deletions)

    def expires_in(self, key: str) -> float | None:
        """Seconds until `key`'s expectations expire (None when there are none): a controller
        can requeue the job then, in case the awaited event was lost."""
        pending = self._jobs.get(key)
        if pending is None:
            return None
        return max(0.0, pending.since + self.ttl - self._clock.monotonic())

    def forget(self, key: str) -> None:
        """Drop everything for `key` (the job was deleted)."""
        self._jobs.pop(key, None)

    def __len__(self) -> int:
        return len(self._jobs)

    def _raise(self, key: str, names: Iterable[str], *, deleting: bool) -> None:
        names = set(names)
        if not names:
            return
        pending = self._jobs.setdefault(key, _Pending())
        (pending.deletions if deleting else pending.creations).update(names)
        pending.since = self._clock.monotonic()

    def _drop_if_empty(self, key: str, pending: _Pending) -> None:
        if not pending.creations and not pending.deletions:
            del self._jobs[key]
