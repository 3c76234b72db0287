"""What the dashboard shows of a Kubeflow Trainer TrainJob (trainer.kubeflow.org), whose API
is not a Kubeflow v1 job's: the one place the views read its fields. Pure.

- **State**: Trainer's conditions are only `Suspended`, `Complete` and `Failed` (no `Created`,
  no `Running`), and `Suspended` stays, status False, once the job is resumed. So the state is
  the terminal condition that holds (`Complete` reads as the dashboard's `Succeeded`), else
  `Suspended` while that condition is True, else `PodsNotStarting` while kubetrain's condition
  of that name is True (containers of its pods cannot start), else `Running` once the status
  counts a job of a step active, ready or succeeded (`status.jobsStatus`), else `Pending`.
- **Replicas**: a TrainJob has no `<kind>ReplicaSpecs` and no `replicaStatuses`; its status
  counts, per replicated job of its runtime (a step: `node`, `dataset-initializer`, …), the
  batch Jobs that are ready, succeeded, failed, active, suspended — Jobs, not pods: one Job of
  the trainer step runs `spec.trainer.numNodes` pods. The list shows per step `node 1/1`: the
  Jobs active or succeeded of the Jobs the status counts, and says so in the cell's tooltip.
- **Restarts**: Trainer's status has no restart count (JobSet's `status.restarts` and
  `replicatedJobsStatus[].jobRestarts` are on the JobSet, which kubetrain does not make).
  kubetrain records a TrainJob's restarts in the run's record (the runtime snapshot ConfigMap's
  `data.state`) and stamps each pod with them: `jobset.sigs.k8s.io/restart-attempt`, the
  whole-gang restarts (the failure policy's `RestartJobSet`, a stall restart), and under a
  `RestartJob` rule `jobset.sigs.k8s.io/job-restart-attempt`, the restarts of the pod's own Job
  alone. The column adds them up (`RestartTally`): the highest whole-gang attempt plus, per
  Job, its highest attempt, of the pods the dashboard saw and of the run's record, which its
  informer of the snapshot ConfigMaps reads (`runrecord.py`) — so it counts while the TrainJob
  has no pod (between attempts, once its pods are removed) and reads no event.
- **Suspend / resume**: `spec.suspend` (a TrainJob has no `runPolicy`).
- **Steps** (the job page): one line per step the status names, with `numNodes` for the
  trainer step, its pods as the dashboard sees them, and its Job counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.errors import json_int
from kubetrain.api.trainer import constants as c
from kubetrain.dashboard.views.podhistory import as_int

NOT_STARTING = "PodsNotStarting"
JOB_COUNTS = ("active", "ready", "succeeded", "failed", "suspended")  # jobsStatus' counts, in the order shown
REPLICAS_UNIT = (
    "TrainJob: batch Jobs of each step (status.jobsStatus), active or succeeded / counted — "
    "Jobs, not pods: one Job of the node step runs spec.trainer.numNodes pods"
)


def is_trainjob(job: Mapping[str, Any]) -> bool:
    return is_trainjob_kind(str(job.get("apiVersion") or "").partition("/")[0], str(job.get("kind") or ""))


def is_trainjob_kind(group: str, kind: str) -> bool:
    return group == c.GROUP and kind == c.TRAINJOB


def suspend_patch(suspend: bool) -> dict[str, Any]:
    """The merge patch that suspends or resumes a TrainJob: its `spec.suspend` (it has no
    `runPolicy`)."""
    return {"spec": {"suspend": suspend}}


def spec_suspended(job: Mapping[str, Any]) -> bool:
    """Whether the TrainJob is asked to be suspended (`spec.suspend`): the page offers Resume."""
    return ((job.get("spec") or {}).get("suspend")) is True


def _true(job: Mapping[str, Any]) -> set[str]:
    conditions = (job.get("status") or {}).get("conditions") or ()
    return {str(x.get("type")) for x in conditions if isinstance(x, dict) and x.get("status") == "True"}


def _count(entry: Mapping[str, Any], key: str) -> int:
    try:
        return max(0, int(entry.get(key) or 0))
    except (TypeError, ValueError):
        return 0


def jobs_status(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`status.jobsStatus`: the entries that name their step."""
    entries = (job.get("status") or {}).get("jobsStatus") or ()
    return [e for e in entries if isinstance(e, dict) and e.get("name")]


def state(job: Mapping[str, Any]) -> str:
    """The display state (one of the list's states) of a TrainJob."""
    true = _true(job)
    if c.FAILED in true:
        return "Failed"
    if c.COMPLETE in true:
        return "Succeeded"
    if c.SUSPENDED in true:
        return "Suspended"
    if NOT_STARTING in true:  # kubetrain's: containers of its pods cannot start (operator/podstart.py)
        return NOT_STARTING
    under_way = any(_count(e, k) for e in jobs_status(job) for k in ("active", "ready", "succeeded"))
    return "Running" if under_way else "Pending"


def counted(entry: Mapping[str, Any]) -> int:
    """The Jobs of a step the status counts: those not finished (active, ready or suspended —
    JobSet counts a Job in each that applies, so the largest of them), succeeded and failed."""
    unfinished = max(_count(entry, "active"), _count(entry, "ready"), _count(entry, "suspended"))
    return unfinished + _count(entry, "succeeded") + _count(entry, "failed")


def replica_summary(job: Mapping[str, Any]) -> str:
    """`node 1/1` per step: its Jobs active or succeeded of those the status counts."""
    return " · ".join(
        f"{e['name']} {_count(e, 'active') + _count(e, 'succeeded')}/{counted(e)}" for e in jobs_status(job)
    )


def replica_title(job: Mapping[str, Any]) -> str:
    """The tooltip of a TrainJob's Replicas cell: the unit, then every count of every step."""
    lines = [REPLICAS_UNIT]
    for e in jobs_status(job):
        lines.append(f"{e['name']}: " + ", ".join(f"{_count(e, k)} {k}" for k in JOB_COUNTS))
    return "\n".join(lines) if len(lines) > 1 else ""


def _label_int(labels: Mapping[str, Any], key: str) -> int:
    return max(0, as_int(labels.get(key)) or 0)


@dataclass
class RestartTally:
    """A TrainJob's restarts as its pods tell them: the highest whole-gang attempt seen, and per
    Job (`batch.kubernetes.io/job-name`, the same in every attempt) the highest attempt of its
    own restarts — a Job's count is kept across whole-gang restarts, as JobSet keeps it."""

    gang: int = 0
    jobs: dict[str, int] = field(default_factory=dict)

    def observe(self, pod: Mapping[str, Any]) -> None:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        self.gang = max(self.gang, _label_int(labels, c.RESTART_ATTEMPT))
        job, attempt = labels.get(c.JOB_NAME), _label_int(labels, c.JOB_RESTART_ATTEMPT)
        if job and attempt > self.jobs.get(str(job), 0):
            self.jobs[str(job)] = attempt

    @property
    def total(self) -> int:
        return self.gang + sum(self.jobs.values())

    def merged(self, other: RestartTally | None) -> RestartTally:
        """Both tallies' counts, the higher of each (the pods' and the recorded ones)."""
        if other is None:
            return self
        jobs = dict(self.jobs)
        for job, attempt in other.jobs.items():
            jobs[job] = max(jobs.get(job, 0), attempt)
        return RestartTally(max(self.gang, other.gang), jobs)


def is_trainjob_pod(pod: Mapping[str, Any]) -> bool:
    """A pod a TrainJob made (JobSet's restart-attempt label: no other kind's pods carry it)."""
    return c.RESTART_ATTEMPT in ((pod.get("metadata") or {}).get("labels") or {})


def num_nodes(job: Mapping[str, Any]) -> int | None:
    return json_int(((job.get("spec") or {}).get("trainer") or {}).get("numNodes"))


@dataclass(frozen=True)
class StepLine:
    name: str
    nodes: str  # numNodes for the trainer step when set, else ""
    pods: str  # "2 running of 2" from the pods the dashboard sees
    jobs: str  # "1 active, 1 ready, 0 succeeded, 0 failed, 0 suspended"


def _step_of(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(c.REPLICATED_JOB_NAME) or "")


def steps(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> tuple[StepLine, ...]:
    """The job page's steps: one per `status.jobsStatus` entry (none before the status names
    them), numNodes on the trainer step (`node`), and the step's pods by their
    `jobset.sigs.k8s.io/replicatedjob-name` label."""
    by_step: dict[str, list[str]] = {}
    for pod in pods:
        by_step.setdefault(_step_of(pod), []).append(str((pod.get("status") or {}).get("phase") or "Pending"))
    nodes = num_nodes(job)
    lines = []
    for e in jobs_status(job):
        name = str(e["name"])
        phases = by_step.get(name, [])
        running = sum(p == "Running" for p in phases)
        lines.append(
            StepLine(
                name=name,
                nodes=str(nodes) if name == c.NODE and nodes is not None else "",
                pods=f"{running} running of {len(phases)}" if phases else "none",
                jobs=", ".join(f"{_count(e, k)} {k}" for k in JOB_COUNTS),
            )
        )
    return tuple(lines)
