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
- **Restarts**: Trainer's status has no restart count (JobSet's `status.restarts` is on the
  JobSet, which kubetrain does not make). kubetrain records a TrainJob's whole-gang restarts —
  the runtime's failure policy restarting the JobSet, a stall restart — in the run's record
  (the runtime snapshot ConfigMap's `data.state`) and stamps each pod of the run with it as
  `jobset.sigs.k8s.io/restart-attempt`; the column shows the highest attempt among the
  TrainJob's pods the dashboard saw (`restarts`), so it reads neither ConfigMaps nor events.
- **Suspend / resume**: `spec.suspend` (a TrainJob has no `runPolicy`).
- **Steps** (the job page): one line per step the status names, with `numNodes` for the
  trainer step, its pods as the dashboard sees them, and its Job counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.errors import json_int
from kubetrain.api.trainer import constants as c
from kubetrain.dashboard.views.podhistory import PodLife

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


def restarts(lives: Iterable[PodLife]) -> int:
    """A TrainJob's whole-gang restarts: the highest restart attempt among its pods' lives (a
    pod of the current attempt carries the run's count; a later attempt's never a lower one)."""
    return max((life.attempt for life in lives), default=0)


def pod_attempt(pod: Mapping[str, Any]) -> int:
    """The restart attempt a TrainJob's pod belongs to (its JobSet label; 0 without one)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    try:
        return max(0, int(str(labels.get(c.RESTART_ATTEMPT))))
    except ValueError:
        return 0


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
