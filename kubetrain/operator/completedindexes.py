"""The completed indexes of a job's current run, as the Job controller keeps an Indexed Job's —
pure; `groupactive.GroupActiveJob` (a per-group shape's batch Jobs: a TrainJob's) and
`active.ActiveJob` (the v1 kinds) apply them.

The Job controller tracks a pod with a finalizer until it has counted it, and an Indexed Job's
index that succeeded stays in `status.completedIndexes` whatever becomes of its pod afterwards:
a Succeeded pod deleted later (pod garbage collection of a deleted node's pods, the
terminated-pod threshold, `kubectl delete`) is not made again (job_controller.go `syncJob`,
indexed_job_utils.go `calculateSucceededIndexes`). So here: every slot of the current attempt
whose pod is Succeeded is recorded, and a recorded slot without a pod counts as Succeeded — for
the success rules, for `dependsOn` and JobSet's InOrder start, in the per-group status — and is
never made again.

Two records, one set of slots:
- a TrainJob's (`read`, `record`): the run's `completedIndexes`, per Job key
  (`groupfailure.job_key`) the sorted indexes in that Job that succeeded; kept until the Job
  restarts alone (`forget`) or the gang restarts (a restart's record starts without it);
- the v1 kinds' (`read_types`, `by_type`): `status.completedIndexes`, per replica type the
  indexes whose pod succeeded, in the Job API's compressed form (`"0,2-3"`, as a Job's
  `status.completedIndexes`: `kubetrain.api.indexes`); it starts over with the run
  (a whole-job restart, a suspend: `active.py`).
A key naming no Job or replica type of the shape, or an index out of its range, is dropped
(the Job controller drops a corrupt interval and an index past `completions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubetrain.api.indexes import format_indexes, parse_indexes
from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.jobs.shape import JobShape
from kubetrain.operator import groupfailure
from kubetrain.operator.pods import pod_phase

COMPLETED_INDEXES = "completedIndexes"  # the run's record: per Job key, its succeeded indexes

Slot = tuple[str, int]


class CompletedIndexes:
    """The slots of a shape whose pod succeeded in the current run."""

    def __init__(self, shape: JobShape, slots: set[Slot] | None = None) -> None:
        self.shape = shape
        self.slots: set[Slot] = slots or set()

    @classmethod
    def read(cls, shape: JobShape, record: Mapping[str, Any]) -> CompletedIndexes:
        recorded = record.get(COMPLETED_INDEXES)
        listed = recorded if isinstance(recorded, Mapping) else {}
        slots: set[Slot] = set()
        for name, group in shape.groups.items():
            size = max(group.job_size, 1)
            for j in range(groupfailure.jobs_of(group)):
                indexes = listed.get(groupfailure.job_key(shape, name, j))
                in_job = groupfailure.job_slots(group, j)
                for i in indexes if isinstance(indexes, list) else ():
                    if isinstance(i, int) and not isinstance(i, bool) and j * size + i in in_job:
                        slots.add((name, j * size + i))
        return cls(shape, slots)

    @classmethod
    def read_types(cls, shape: JobShape, recorded: object) -> CompletedIndexes:
        """The v1 kinds' record (`status.completedIndexes`: replica type -> `"0,2-3"`)."""
        listed = recorded if isinstance(recorded, Mapping) else {}
        slots: set[Slot] = set()
        for name, group in shape.groups.items():
            text = listed.get(name)
            if isinstance(text, str):
                slots |= {(name, i) for i in parse_indexes(text, group.replicas)}
        return cls(shape, slots)

    def observe(self, slots: Mapping[Slot, Mapping[str, Any]]) -> None:
        """Record the slots (of the current attempt) whose pod is Succeeded."""
        self.slots |= {slot for slot, pod in slots.items() if pod_phase(pod) == "Succeeded"}

    def forget(self, group: str, job: int) -> None:
        """Job `job` of `group` restarted alone: its indexes start over."""
        self.slots -= {(group, k) for k in groupfailure.job_slots(self.shape.groups[group], job)}

    def record(self) -> dict[str, Any]:
        """The record's part (no key when no index completed)."""
        out: dict[str, list[int]] = {}
        for name, k in sorted(self.slots):
            group = self.shape.groups[name]
            size = max(group.job_size, 1)
            key = groupfailure.job_key(self.shape, name, groupfailure.job_of(group, k))
            out.setdefault(key, []).append(k % size)
        return {COMPLETED_INDEXES: out} if out else {}

    def by_type(self) -> dict[str, str]:
        """The v1 kinds' record: per replica type with a completed index, its indexes."""
        return {
            name: format_indexes(k for g, k in self.slots if g == name)
            for name in self.shape.groups
            if any(g == name for g, _ in self.slots)
        }

    def counts(self, counts: Mapping[str, ReplicaCounts]) -> dict[str, ReplicaCounts]:
        """`counts` with every completed index counted as Succeeded (once)."""
        out = dict(counts)
        for name in {g for g, _ in self.slots}:
            base = out.get(name, ReplicaCounts())
            done = base.succeeded_indices | {k for g, k in self.slots if g == name}
            added = len(done) - len(base.succeeded_indices)
            out[name] = replace(base, succeeded=base.succeeded + added, succeeded_indices=frozenset(done))
        return out
