"""The per-group status of a per-group shape (JobSet's `replicatedJobsStatus`, Trainer's
`jobsStatus`): per group, how many of its batch Jobs (`ReplicaGroup.job_size` pods each) are
ready, succeeded (every pod Succeeded, or by the Job's success policy), failed (past their
backoff limit, or failed by a pod failure rule or their deadline: the planner's failed Jobs) and
active — written by the shape's status projection.
Pure."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from kubetrain.jobs.projection import GroupTally
from kubetrain.jobs.shape import JobShape
from kubetrain.operator import groupfailure, runpolicy
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.pods import pod_name, pod_phase, pod_ready


def jobs_per_group(shape: JobShape) -> dict[str, int]:
    return {name: groupfailure.jobs_of(g) for name, g in shape.groups.items()}


def write(
    r: ReconcileDraft,
    shape: JobShape,
    failed_jobs: Mapping[str, Sequence[int]],
    by_policy: Collection[tuple[str, int]] = (),
    completed: Collection[tuple[str, int]] = (),
    earlier: Collection[str] = (),
) -> None:
    """The counts over the reconcile's pods (those it deletes and the pods named in `earlier`,
    of an earlier attempt, left out), into `r.status`; a Job in `by_policy` (group, Job)
    succeeded by its success policy (`jobsuccess.py`); a slot in `completed`
    (`completedindexes.py`) counts as Succeeded when its pod is gone."""
    by_name = {pod_name(p): p for p in r.pods if pod_name(p) not in r.deleting and pod_name(p) not in earlier}
    out: list[GroupTally] = []
    for name, jobs in jobs_per_group(shape).items():
        ready = succeeded = failed = active = 0
        failed_here = set(failed_jobs.get(name, ()))
        for j in range(jobs):
            slots = groupfailure.job_slots(shape.groups[name], j)
            pods = [by_name.get(shape.pod_name(name, k)) for k in slots]
            if j in failed_here:
                failed += 1
            elif (name, j) in by_policy or all(
                (name, k) in completed if p is None else pod_phase(p) == "Succeeded"
                for k, p in zip(slots, pods, strict=True)
            ):
                succeeded += 1
            elif any(p is not None and runpolicy.is_active_pod(p) for p in pods):
                active += 1
                if all(
                    (name, k) in completed if p is None else pod_ready(p) or pod_phase(p) == "Succeeded"
                    for k, p in zip(slots, pods, strict=True)
                ):
                    ready += 1
        out.append(
            GroupTally(
                name, shape.count(name), active=active, succeeded=succeeded, failed=failed, ready=ready
            )
        )
    shape.status.write_groups(r.status, out)


def write_suspended(
    r: ReconcileDraft, shape: JobShape, kept: Collection[tuple[str, int]], done: Collection[tuple[str, int]]
) -> None:
    """The counts of a suspended job, into `r.status`: a Job whose every slot keeps its
    Succeeded pod (`kept`) or that succeeded by its success policy (`done`) is succeeded, every
    other one suspended — JobSet's `calculateReplicatedJobStatuses` over its suspended Jobs."""
    out: list[GroupTally] = []
    for name, jobs in jobs_per_group(shape).items():
        group = shape.groups[name]
        succeeded = sum(
            1
            for j in range(jobs)
            if (name, j) in done or all((name, k) in kept for k in groupfailure.job_slots(group, j))
        )
        out.append(GroupTally(name, shape.count(name), succeeded=succeeded, suspended=jobs - succeeded))
    shape.status.write_groups(r.status, out)
