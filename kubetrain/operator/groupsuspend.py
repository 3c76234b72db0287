"""A suspended per-group shape (a TrainJob), as JobSet suspends its Jobs — pure;
`groupactive.GroupActiveJob.suspend` applies it.

JobSet suspends only its active Jobs (jobset_controller.go `suspendJobs`) and the Job controller
deletes only a suspended Job's active pods: a Succeeded pod of the current attempt (and of its
Job's current attempt) is kept, so a resume makes no finished index again — an initializer that
completed does not run twice after a Kueue preemption; every other pod is deleted. The per-group
status counts a Job whose every index succeeded (its pod kept, or recorded completed:
`completedindexes.py`) or that succeeded by its success policy as succeeded, every other Job as
suspended (`calculateReplicatedJobStatuses`). Suspended Jobs have no start time (the Job
controller clears a suspended Job's `startTime`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.jobs.shape import JobShape
from kubetrain.operator import groupstatus
from kubetrain.operator.completedindexes import CompletedIndexes
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.jobdeadlines import JOB_START_TIMES
from kubetrain.operator.jobrestarts import JobRestarts
from kubetrain.operator.jobsuccess import JobSuccess
from kubetrain.operator.pods import pod_name, pod_phase
from kubetrain.operator.slots import slot_pods


def suspend(r: ReconcileDraft, shape: JobShape, attempt_of: Callable[[Mapping[str, Any]], str]) -> None:
    """Suspend the job in reconcile `r` (`attempt_of`: a pod's whole-gang attempt)."""
    suspended = shape.status.set_suspended(r.status, r.title, r.now)
    if suspended is not None:
        r.event("Normal", *suspended)
    state = r.record
    attempt = str(int(state.get("restarts") or 0))
    jobs = JobRestarts.read(shape, state)
    every, _ = slot_pods(shape, r.live_pods())
    kept = {
        s: p
        for s, p in every.items()
        if pod_phase(p) == "Succeeded" and attempt_of(p) == attempt and jobs.current(s, p)
    }
    names = {pod_name(p) for p in kept.values()}
    r.delete([pod_name(p) for p in r.live_pods() if pod_name(p) not in names])
    if JOB_START_TIMES in state:
        r.plan.record = {k: v for k, v in state.items() if k != JOB_START_TIMES}
    done = set(kept) | CompletedIndexes.read(shape, state).slots
    groupstatus.write_suspended(r, shape, done, JobSuccess.read(shape, state).done)
