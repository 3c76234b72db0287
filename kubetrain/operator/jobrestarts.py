"""Single-Job restarts of a per-group shape (JobSet's `RestartJob` and
`RestartJobAndIgnoreMaxRestarts` on a TrainJob's batch Jobs) in the run's record — pure.

The record (`JobShape.recording`: a TrainJob's snapshot ConfigMap, `data.state`) keeps, per
group with a restarted Job, one count per Job, as JobSet's `status.replicatedJobsStatus[]`
does: `jobRestarts` (every single-Job restart of that Job) and `jobRestartsCountTowardsMax`
(those that count towards the gang policy's `max_restarts`), e.g. `{"jobRestarts": {"worker":
[0, 2, 0]}}`. A whole-gang restart leaves them as they are (JobSet keeps them too). The
restarts counted towards `max_restarts` are JobSet's `totalRestartsCountTowardsMax`: the
whole-gang restarts that counted (`countedRestarts`) plus every Job's counted restarts.

A pod carries its Job's attempt in the shape's `recording.job_attempt_label` (a TrainJob's
`jobset.sigs.k8s.io/job-restart-attempt`; absent: attempt 0); a pod whose label is not its
Job's current attempt belongs to an earlier attempt of that Job: it is deleted, and holds its
slot until it is gone, as a pod of an earlier whole-gang attempt does. A count that is not a
non-negative integer reads as 0; a group the shape does not have is dropped; a list shorter
than the group's Jobs is padded with zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.jobs.shape import JobShape
from kubetrain.operator import groupfailure

JOB_RESTARTS = "jobRestarts"
JOB_RESTARTS_COUNTED = "jobRestartsCountTowardsMax"  # JobSet's field name


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _read(shape: JobShape, recorded: object) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    if not isinstance(recorded, Mapping):
        return out
    for name, group in shape.groups.items():
        values = recorded.get(name)
        if not isinstance(values, list):
            continue
        jobs = groupfailure.jobs_of(group)
        counts = [_count(v) for v in values[:jobs]]
        out[name] = counts + [0] * (jobs - len(counts))
    return out


@dataclass
class JobRestarts:
    """The single-Job restarts of a shape's Jobs, per group, per Job index."""

    shape: JobShape
    restarts: dict[str, list[int]] = field(default_factory=dict)
    counted: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def read(cls, shape: JobShape, record: Mapping[str, Any]) -> JobRestarts:
        """The counts in the run's record."""
        return cls(
            shape, _read(shape, record.get(JOB_RESTARTS)), _read(shape, record.get(JOB_RESTARTS_COUNTED))
        )

    def job_of(self, group: str, index: int) -> int:
        """The Job slot `index` of `group` belongs to."""
        return groupfailure.job_of(self.shape.groups[group], index)

    def attempt(self, group: str, job: int) -> int:
        """The current attempt of Job `job` of `group`: its restarts so far."""
        counts = self.restarts.get(group)
        return counts[job] if counts is not None and job < len(counts) else 0

    def current(self, slot: tuple[str, int], pod: Mapping[str, Any]) -> bool:
        """Whether the pod in `slot` belongs to its Job's current attempt."""
        group, index = slot
        labels = (pod.get("metadata") or {}).get("labels") or {}
        label = self.shape.recording.job_attempt_label
        named = str(labels.get(label, "0")) if label else "0"
        return named == str(self.attempt(group, self.job_of(group, index)))

    def counted_total(self) -> int:
        """The single-Job restarts that count towards `max_restarts`, over every Job."""
        return sum(sum(counts) for counts in self.counted.values())

    def restart(self, group: str, job: int, counts: bool) -> None:
        """Job `job` of `group` restarted once more (counted towards `max_restarts` or not)."""
        jobs = groupfailure.jobs_of(self.shape.groups[group])
        for table, bump in ((self.restarts, True), (self.counted, counts)):
            if bump:
                table.setdefault(group, [0] * jobs)[job] += 1

    def slots(self, group: str, job: int) -> list[tuple[str, int]]:
        """The slots of Job `job` of `group`."""
        return [(group, k) for k in groupfailure.job_slots(self.shape.groups[group], job)]

    def record(self) -> dict[str, Any]:
        """The record's fields (none while no Job was ever restarted alone), in shape order."""
        out: dict[str, Any] = {}
        for key, table in ((JOB_RESTARTS, self.restarts), (JOB_RESTARTS_COUNTED, self.counted)):
            kept = {g: list(table[g]) for g in self.shape.groups if any(table.get(g) or ())}
            if kept:
                out[key] = kept
        return out
