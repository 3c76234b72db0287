"""A batch Job's failures counted per index (`backoffLimitPerIndex`, `maxFailedIndexes`, the
`FailIndex` rule action), as the Job controller counts them — pure; `groupfailure.judge` applies it.

An index of a Job is the pod's completion index within it (slot `k` of a group is index
`k % job_size` of Job `k // job_size`). Its failures are the Failed pods counted against it (the
Job controller's `batch.kubernetes.io/job-index-failure-count`, `getNewIndexFailureCounts`: a pod
an `Ignore` rule matched does not count); the index has failed once they are over the Job's
`backoffLimitPerIndex`, or at once when a `FailIndex` rule matched (`isIndexFailed`). A failed
index is not retried: its Failed pod is kept and no pod is made for it again. The Job has failed
(`job_controller.go`, `syncJob`, in this order after a FailJob rule, the backoff limit and the
deadline): with reason `MaxFailedIndexesExceeded` once its failed indexes are more than
`maxFailedIndexes`, else with reason `FailedIndexes` once every index has succeeded or failed
and at least one failed.

The record: each index with counted failures is a key `<job key>#<index>` of the run's `failures`
record (`groupfailure.job_key`: the group's name, or `<group>/<job>`), valued with its count; a
`FailIndex` index is recorded with one failure past the limit, which is how a later reconcile
knows it failed. `#` is never in a group name (a DNS label) nor a Job index, so these keys never
collide with the Job keys, and a reader that knows only Job keys keeps them as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubetrain.jobs.failuremodel import (
    MESSAGE_FAILED_INDEXES,
    MESSAGE_MAX_FAILED_INDEXES,
    REASON_FAILED_INDEXES,
    REASON_MAX_FAILED_INDEXES,
)

INDEX_SEPARATOR = "#"  # never in a group name (a DNS label) nor a Job index

IndexKey = tuple[str, int, int]  # (group, Job index, completion index within the Job)


def index_key(job_key: str, index: int) -> str:
    """The record's key for completion index `index` of the Job keyed `job_key`."""
    return f"{job_key}{INDEX_SEPARATOR}{index}"


def split_key(key: str) -> tuple[str, int] | None:
    """(job key, index) of an index key; None for any other key."""
    job, sep, index = key.rpartition(INDEX_SEPARATOR)
    if not sep or not job or not (index.isascii() and index.isdigit()):
        return None
    return job, int(index)


def failed(count: int, limit: int) -> bool:
    """An index with `count` counted failures has failed under `backoffLimitPerIndex` `limit`
    (`isIndexFailed`: the pod's earlier failures ≥ the limit, so one more than it in all)."""
    return count > limit


def fail_index_count(count: int, limit: int) -> int:
    """The count recorded for an index a FailIndex rule failed: failed whatever its count."""
    return max(count, limit + 1)


@dataclass(frozen=True)
class JobIndexes:
    """One Job's indexes as this reconcile saw them."""

    completions: int  # the Job's pods (its completion indexes 0..completions-1)
    failed: frozenset[int]  # its failed indexes
    succeeded: frozenset[int]  # its indexes whose pod Succeeded


def job_verdict(job: JobIndexes, max_failed: int | None) -> tuple[str, str] | None:
    """Why the Job has failed through its indexes ((reason, message), the Job controller's),
    or None while it has not: past `maxFailedIndexes`, or every index finished with one failed."""
    if max_failed is not None and len(job.failed) > max_failed:
        return REASON_MAX_FAILED_INDEXES, MESSAGE_MAX_FAILED_INDEXES
    if job.failed and len(job.failed | job.succeeded) >= job.completions:
        return REASON_FAILED_INDEXES, MESSAGE_FAILED_INDEXES
    return None


def failed_indexes(counts: Mapping[IndexKey, int], group: str, job: int, limit: int) -> frozenset[int]:
    """The failed indexes of Job `job` of `group` by the recorded counts."""
    return frozenset(i for (g, j, i), n in counts.items() if g == group and j == job and failed(n, limit))
