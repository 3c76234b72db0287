"""The Jobs' own `activeDeadlineSeconds` of a per-group shape (a TrainJob replicated job's Job
spec, `FailureModel.active_deadlines`) in the run's record — pure.

The Job controller fails a Job that is still running once `now - status.startTime` reaches its
`activeDeadlineSeconds` (job_controller.go, `pastActiveDeadline`): reason `DeadlineExceeded`,
message `Job was active longer than specified deadline`, a Warning event on the Job, its
running pods deleted. `startTime` is set when the Job starts — JobSet creates a replicated job's
Jobs when their `dependsOn` is met, and new ones on a whole-gang restart or a single-Job
restart — and cleared while the Job is suspended. kubetrain has no Job objects, so the record
(`jobStartTimes`, keyed as `failures` is: `groupfailure.job_key`) keeps when each Job's first
pod of its attempt was created, written only for groups with a deadline; a whole-gang restart
starts a record without it, a single-Job restart forgets that Job's start, a suspension every
start. A Job with a pod but no recorded start (a record from before) starts now. A time that
does not parse is dropped (that Job starts again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.jobs.shape import JobShape
from kubetrain.operator import groupfailure
from kubetrain.operator.pods import pod_phase
from kubetrain.operator.status import format_time

JOB_START_TIMES = "jobStartTimes"
REASON = "DeadlineExceeded"  # batch/v1 JobReasonDeadlineExceeded
MESSAGE = "Job was active longer than specified deadline"  # the Job controller's


@dataclass
class JobDeadlines:
    """When each Job of the groups with a deadline started, per (group, Job index)."""

    shape: JobShape
    starts: dict[tuple[str, int], datetime] = field(default_factory=dict)

    @classmethod
    def read(cls, shape: JobShape, record: Mapping[str, Any]) -> JobDeadlines:
        out = cls(shape)
        recorded = record.get(JOB_START_TIMES)
        if not out.groups or not isinstance(recorded, Mapping):
            return out
        for name in out.groups:
            for job in range(groupfailure.jobs_of(shape.groups[name])):
                at = parse_time(recorded.get(groupfailure.job_key(shape, name, job)))
                if at is not None:
                    out.starts[(name, job)] = at
        return out

    @property
    def groups(self) -> dict[str, int]:
        """The groups whose Jobs have a deadline, and its seconds."""
        return {g: s for g, s in self.shape.failure.active_deadlines.items() if g in self.shape.groups}

    def started(self, slots: Iterable[tuple[str, int]], now: datetime) -> None:
        """The Jobs of these slots (pods made or seen now) have started, if not before."""
        for group, index in slots:
            if group in self.groups:
                self.starts.setdefault((group, groupfailure.job_of(self.shape.groups[group], index)), now)

    def forget(self, group: str, job: int) -> None:
        """The Job restarts alone: its next attempt starts afresh."""
        self.starts.pop((group, job), None)

    def expired(
        self, slots: Mapping[tuple[str, int], Mapping[str, Any]], now: datetime
    ) -> tuple[list[tuple[str, int, datetime]], datetime | None]:
        """The Jobs past their deadline that have not succeeded (group, Job index, when the
        deadline passed), and the earliest deadline still to come (None: none)."""
        out: list[tuple[str, int, datetime]] = []
        due: datetime | None = None
        for (group, job), start in sorted(self.starts.items(), key=lambda kv: self._order(kv[0])):
            deadline = start + timedelta(seconds=self.groups.get(group, 0))
            pods = [slots.get((group, k)) for k in groupfailure.job_slots(self.shape.groups[group], job)]
            if all(p is not None and pod_phase(p) == "Succeeded" for p in pods):
                continue  # a finished Job has no deadline
            if now >= deadline:
                out.append((group, job, deadline))
            elif due is None or deadline < due:
                due = deadline
        return out, due

    def fail_past(
        self,
        slots: Mapping[tuple[str, int], Mapping[str, Any]],
        now: datetime,
        failed_jobs: dict[str, list[int]],
        failed_at: dict[tuple[str, int], datetime | None],
        reasons: dict[tuple[str, int], tuple[str, str]],
    ) -> tuple[list[str], datetime | None]:
        """The Jobs of these slots have started (a Job with a pod but no recorded start: now);
        those past their deadline and not failed already are added to the failed Jobs (in the
        shape's order, Jobs ascending) with the deadline's time and reason. Returns an event
        message per such Job, and the earliest deadline still to come."""
        self.started(slots, now)
        expired, due = self.expired(slots, now)
        told: list[str] = []
        for group, job, at in expired:
            if job in failed_jobs.get(group, ()):
                continue
            failed_jobs[group] = sorted([*failed_jobs.get(group, ()), job])
            failed_at[(group, job)] = at
            reasons[(group, job)] = (REASON, MESSAGE)
            told.append(f"Job {self.shape.name}-{group}-{job}: {MESSAGE}")
        if told:  # the gang policy reads them in the shape's group order
            ordered = {g: failed_jobs.pop(g) for g in list(self.shape.groups) if g in failed_jobs}
            failed_jobs.update(ordered)
        return told, due

    def _order(self, key: tuple[str, int]) -> tuple[int, int]:
        return list(self.shape.groups).index(key[0]), key[1]

    def record(self) -> dict[str, Any]:
        """The record's part: `jobStartTimes` ({} when no group has a deadline)."""
        if not self.groups:
            return {}
        starts = sorted(self.starts.items(), key=lambda kv: self._order(kv[0]))
        return {
            JOB_START_TIMES: {
                groupfailure.job_key(self.shape, group, job): format_time(at) for (group, job), at in starts
            }
        }
