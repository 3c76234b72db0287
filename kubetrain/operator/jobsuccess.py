"""A batch Job that succeeded by its `successPolicy` (`jobs/jobsuccess.py`), as the Job controller
settles it — pure; `groupactive.GroupActiveJob.pods` applies it.

Each reconcile, a Job of a group with success rules whose succeeded indexes (its pods that
Succeeded, index `k % job_size` of slot `k`) match a rule has succeeded (`job_controller.go`,
`syncJob`: the success policy is checked after the failure checks, so a Job that failed in the
same pass stays failed): a Normal event `SuccessPolicy` ("Matched rules at index <i>"), its
Running and Pending pods deleted (the Job controller's terminating of its remaining pods), its
Failed pods kept. From then on the Job counts as succeeded: for the JobSet success rules (every
one of its indexes counts as Succeeded), for `dependsOn` (its slots count as Succeeded), in the
per-group status (`succeeded`), and its slots are never made again nor judged for failures.

The record: the run's `succeededJobs`, the Job keys (`groupfailure.job_key`) of those Jobs, kept
until the Job restarts alone (`forget`) or the gang restarts (a restart's record starts without
it). A key naming no Job of the shape is dropped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.jobs import jobsuccess
from kubetrain.jobs.shape import JobShape
from kubetrain.operator import groupfailure
from kubetrain.operator.draft import Draft
from kubetrain.operator.pods import pod_name, pod_phase, terminating
from kubetrain.operator.runpolicy import is_active_pod

SUCCEEDED_JOBS = "succeededJobs"  # the run's record: Job keys of the Jobs that succeeded by policy

Slot = tuple[str, int]
Obj = dict[str, Any]


class JobSuccess:
    """The Jobs of a shape that succeeded by their success policy."""

    def __init__(self, shape: JobShape, done: Collection[tuple[str, int]] = ()) -> None:
        self.shape = shape
        self.done: set[tuple[str, int]] = set(done)  # (group, Job index)

    @classmethod
    def read(cls, shape: JobShape, record: Mapping[str, Any]) -> JobSuccess:
        keys = record.get(SUCCEEDED_JOBS)
        names = {
            groupfailure.job_key(shape, name, j): (name, j)
            for name, g in shape.groups.items()
            for j in range(groupfailure.jobs_of(g))
        }
        listed = keys if isinstance(keys, list) else []
        return cls(shape, [names[k] for k in listed if isinstance(k, str) and k in names])

    def record(self) -> Obj:
        """The record's part: the Jobs' keys, in a stable order (no key when there is none)."""
        if not self.done:
            return {}
        keys = sorted(groupfailure.job_key(self.shape, g, j) for g, j in self.done)
        return {SUCCEEDED_JOBS: keys}

    def slots(self) -> set[Slot]:
        """The slots of the Jobs that succeeded by policy: never made again."""
        return {(g, k) for g, j in self.done for k in groupfailure.job_slots(self.shape.groups[g], j)}

    def forget(self, group: str, job: int) -> None:
        """Job `job` of `group` restarted alone: its success starts over."""
        self.done.discard((group, job))

    def settle(
        self, slots: dict[Slot, Obj], failed_jobs: Mapping[str, Collection[int]]
    ) -> tuple[list[str], list[tuple[str, int, int]]]:
        """Match each Job not yet done nor failed (`failed_jobs`) against its rules; the done
        Jobs' slots leave `slots` (not judged again). Returns the names of the pods to delete
        (the done Jobs' Running and Pending ones) and the newly matched (group, Job, rule)."""
        matched: list[tuple[str, int, int]] = []
        for name, group in self.shape.groups.items():
            rules = self.shape.failure.success_rules.get(name, ())
            if not rules:
                continue
            size = max(group.job_size, 1)
            for j in range(groupfailure.jobs_of(group)):
                if (name, j) in self.done or j in failed_jobs.get(name, ()):
                    continue
                succeeded = [
                    k - j * size
                    for k in groupfailure.job_slots(group, j)
                    if (name, k) in slots and pod_phase(slots[(name, k)]) == "Succeeded"
                ]
                rule = jobsuccess.matched_rule(rules, size, succeeded)
                if rule is not None:
                    self.done.add((name, j))
                    matched.append((name, j, rule))
        return self.drop(slots), matched

    def drop(self, slots: dict[Slot, Obj]) -> list[str]:
        """The done Jobs' slots taken out of `slots`; returns their Running and Pending pods'
        names, to delete."""
        delete: list[str] = []
        for slot in self.slots():
            pod = slots.pop(slot, None)
            if pod is not None and is_active_pod(pod) and not terminating(pod):
                delete.append(pod_name(pod))
        return delete

    def apply(self, r: Draft, slots: dict[Slot, Obj], failed_jobs: Mapping[str, Collection[int]]) -> None:
        """`settle` in reconcile `r`: each newly matched Job told in a Normal event
        `SuccessPolicy`, the done Jobs' running and pending pods deleted."""
        delete, matched = self.settle(slots, failed_jobs)
        for group, job, rule in matched:
            r.event("Normal", jobsuccess.REASON, self.message(group, job, rule))
        r.delete(delete)

    def message(self, group: str, job: int, rule: int) -> str:
        """The event told when Job `job` of `group` matched `rule`."""
        key = groupfailure.job_key(self.shape, group, job)
        return f"Job {key} of replicated job {group} succeeded: {jobsuccess.message(rule)}"

    def counts(self, counts: Mapping[str, ReplicaCounts]) -> dict[str, ReplicaCounts]:
        """`counts` with every index of the done Jobs counted as Succeeded."""
        out = dict(counts)
        for name in {g for g, _ in self.done}:
            extra = {k for g, k in self.slots() if g == name}
            base = out.get(name, ReplicaCounts())
            done = base.succeeded_indices | extra
            out[name] = replace(base, succeeded=len(done), succeeded_indices=frozenset(done))
        return out
