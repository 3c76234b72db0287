"""How a job's status shows what the planner decided: the status projection a job shape carries
(`JobShape.status`, a `kubetrain.jobs.projection.StatusProjection`). The planner decides in its own
words — finished (`SUCCEEDED` / `FAILED`), suspended, resumed — and the projection writes them
in the job's API:

- `KUBEFLOW` (the v1 kinds and MPIJob, docs/behaviour.md §5; `MPI_OPERATOR` for an MPIJob
  written as mpi-operator's, which adds Running=False to a job that finished without it):
  Kubeflow's JobStatus —
  conditions with `lastUpdateTime` (a terminal one sets Running and Restarting False, suspending
  does too), `completionTime` (the TTL counts from it) and `startTime` (the deadline counts from
  it; a resume clears it); per group, `replicaStatuses` (pods) and the Replicas/Active totals.
- `TRAINER` (Trainer's TrainJob): metav1.Conditions `Suspended`, `Complete`, `Failed` only, with
  Trainer's reasons and messages; no times besides `lastTransitionTime`: the TTL counts from the
  terminal condition's, the deadline from the last resume's (else from creation); the per-group
  `jobsStatus` (jobs, counted by `groupactive.py`). Its conditions are written by
  `set_condition` here: `lastTransitionTime` changes only with the status.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.api.trainer import constants as c
from kubetrain.jobs.projection import GroupTally
from kubetrain.jobs.shape import FAILED, SUCCEEDED
from kubetrain.operator import status as st

Obj = dict[str, Any]
Event = tuple[str, str]  # (reason, message) of the Normal event a change is told with
MESSAGE_COMPLETED = "jobset completed successfully"
# mpi-operator's (`updateMPIJobStatus`), naming the job as namespace/name.
MESSAGE_NEVER_RUNNING = "MPIJob {ref} is finished but Running condition was never set."
MESSAGE_RESUMED = "MPIJob resumed"  # mpi-operator's, unnamed
MESSAGE_SUSPENDED = "MPIJob suspended"  # mpi-operator's Suspended condition and event, unnamed


def set_condition(status: Obj, ctype: str, value: bool, reason: str, message: str, now: datetime) -> None:
    """A metav1.Condition: lastTransitionTime changes only with the status."""
    conditions = [x for x in status.get("conditions") or [] if isinstance(x, dict)]
    new_status = "True" if value else "False"
    for i, cond in enumerate(conditions):
        if cond.get("type") == ctype:
            moved = cond.get("status") != new_status
            conditions[i] = {
                "type": ctype,
                "status": new_status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": st.format_time(now) if moved else cond.get("lastTransitionTime"),
            }
            status["conditions"] = conditions
            return
    conditions.append(
        {
            "type": ctype,
            "status": new_status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": st.format_time(now),
        }
    )
    status["conditions"] = conditions


class KubeflowStatus:
    """Kubeflow's JobStatus (operator/status.py)."""

    def job_title(self, kind: str, namespace: str, name: str) -> str:
        return f"{kind} {name}"

    def finished(self, status: Obj) -> str | None:
        return st.terminal_condition(status)

    def finished_at(self, status: Obj) -> datetime | None:
        return parse_time(status.get("completionTime"))

    def run_began(self, status: Obj, job: Mapping[str, Any], now: datetime) -> datetime | None:
        return parse_time(status.get("startTime"))

    def set_finished(
        self, status: Obj, outcome: str, reason: str, message: str, now: datetime, *, ref: str = ""
    ) -> None:
        st.set_terminal(status, outcome, reason, message, now)

    def set_suspended(self, status: Obj, title: str, now: datetime) -> Event | None:
        message = f"{title} is suspended."
        changed = st.set_condition(status, st.SUSPENDED, True, st.REASON_SUSPENDED, message, now)
        for ctype in (st.RUNNING, st.RESTARTING):
            if st.is_true(status, ctype):
                st.set_condition(status, ctype, False, st.REASON_SUSPENDED, message, now)
        return (st.REASON_SUSPENDED, message) if changed else None

    def set_resumed(self, status: Obj, title: str, now: datetime) -> Event | None:
        if not st.is_true(status, st.SUSPENDED):
            return None
        message = f"{title} is resumed."
        st.set_condition(status, st.SUSPENDED, False, st.REASON_RESUMED, message, now)
        status.pop("startTime", None)  # the deadline counts from the new start
        return st.REASON_RESUMED, message

    def set_created(self, status: Obj, title: str, now: datetime) -> None:
        st.set_condition(status, st.CREATED, True, st.REASON_CREATED, f"{title} is created.", now)

    def set_transient(
        self, status: Obj, ctype: str, true_as: Event | None, cleared_as: Event, now: datetime
    ) -> None:
        """A JobStatus condition, turned False once it no longer holds (never created False)."""
        st.set_condition(status, ctype, true_as is not None, *(true_as or cleared_as), now)

    def observe_generation(self, status: Obj, generation: object) -> None:
        if isinstance(generation, int):
            status["observedGeneration"] = generation

    def changed(self, old: Obj, new: Obj) -> bool:
        return st.status_changed(old, new)  # pod counts alone are not worth a write

    def write_groups(self, status: Obj, groups: Sequence[GroupTally]) -> None:
        """`replicaStatuses` per replica type (pods), and the totals the printer columns Replicas
        and Active show (a column cannot sum a map)."""
        status["replicaStatuses"] = {
            g.name: {
                "active": g.active,
                "pending": g.pending,
                "succeeded": g.succeeded,
                "failed": g.failed,
                "restarts": g.restarts,
                "priorRestarts": g.prior_restarts,
                "selector": g.selector,
            }
            for g in groups
        }
        status["replicas"] = sum(g.replicas for g in groups)
        status["active"] = sum(g.active for g in groups)

    def restarts(self, status: Obj) -> int:
        """The restarts `replicaStatuses` records, over every replica type."""
        groups = status.get("replicaStatuses")
        values = groups.values() if isinstance(groups, Mapping) else ()
        return sum(int(g.get("restarts") or 0) for g in values if isinstance(g, Mapping))

    def succeeded_as(self, title: str) -> Event:
        return st.REASON_SUCCEEDED, f"{title} successfully completed."

    def deadline_exceeded_as(self, status: Obj, title: str) -> Event:
        started = status.get("startTime")
        return st.REASON_DEADLINE, f"{title} has exceeded its activeDeadlineSeconds (started {started})."


class MPIOperatorStatus(KubeflowStatus):
    """mpi-operator v2beta1's JobStatus (an MPIJob of kubeflow.org not created at v1): Kubeflow's,
    and a job that finishes with no Running condition — its Launcher ended before the operator
    saw every pod run — gets `Running=False` (reason `JobRunning`) dated at its completionTime,
    as mpi-operator's `updateMPIJobStatus` adds it since v0.8.1 (kubeflow/mpi-operator#787), so
    that whoever computes a run's duration from the conditions finds one. Its messages name the
    job as `MPIJob <namespace>/<name>`, and `Suspended` says `MPIJob suspended` / `MPIJob resumed`,
    as mpi-operator's (`updateMPIJobStatus`, `syncHandler`). Its reasons are mpi-operator's
    (`MPIJobRunning`, …: frameworks/jobreasons.py)."""

    def job_title(self, kind: str, namespace: str, name: str) -> str:
        return f"{kind} {namespace}/{name}"

    def set_suspended(self, status: Obj, title: str, now: datetime) -> Event | None:
        """`Suspended` says `MPIJob suspended`, and Running=False — added if missing — `<title>
        is suspended.` (mpi-operator's `updateMPIJobStatus`; TestCreateSuspendedMPIJob)."""
        changed = st.set_condition(status, st.SUSPENDED, True, st.REASON_SUSPENDED, MESSAGE_SUSPENDED, now)
        st.set_not_running(status, st.REASON_SUSPENDED, f"{title} is suspended.", now)
        if st.is_true(status, st.RESTARTING):
            st.set_condition(status, st.RESTARTING, False, st.REASON_SUSPENDED, f"{title} is suspended.", now)
        return (st.REASON_SUSPENDED, MESSAGE_SUSPENDED) if changed else None

    def set_resumed(self, status: Obj, title: str, now: datetime) -> Event | None:
        if not st.is_true(status, st.SUSPENDED):
            return None
        st.set_condition(status, st.SUSPENDED, False, st.REASON_RESUMED, MESSAGE_RESUMED, now)
        status.pop("startTime", None)  # the deadline counts from the new start
        return st.REASON_RESUMED, MESSAGE_RESUMED

    def set_finished(
        self, status: Obj, outcome: str, reason: str, message: str, now: datetime, *, ref: str = ""
    ) -> None:
        super().set_finished(status, outcome, reason, message, now)
        if st.get_condition(status, st.RUNNING) is not None:
            return
        st.set_not_running(status, st.REASON_RUNNING, MESSAGE_NEVER_RUNNING.format(ref=ref), now)
        running = st.get_condition(status, st.RUNNING)
        assert running is not None  # just added
        done = status.get("completionTime") or st.format_time(now)
        running.update(lastUpdateTime=done, lastTransitionTime=done)


class TrainerStatus:
    """Trainer's TrainJob status."""

    def job_title(self, kind: str, namespace: str, name: str) -> str:
        return f"{kind} {name}"

    def finished(self, status: Obj) -> str | None:
        if st.is_true(status, c.COMPLETE):
            return SUCCEEDED
        return FAILED if st.is_true(status, c.FAILED) else None

    def finished_at(self, status: Obj) -> datetime | None:
        outcome = self.finished(status)
        done = st.get_condition(status, c.COMPLETE if outcome == SUCCEEDED else c.FAILED)
        return parse_time((done or {}).get("lastTransitionTime")) if outcome is not None else None

    def run_began(self, status: Obj, job: Mapping[str, Any], now: datetime) -> datetime | None:
        resumed = st.get_condition(status, c.SUSPENDED)
        began = parse_time(resumed.get("lastTransitionTime")) if resumed else None
        return began or parse_time((job.get("metadata") or {}).get("creationTimestamp")) or now

    def set_finished(
        self, status: Obj, outcome: str, reason: str, message: str, now: datetime, *, ref: str = ""
    ) -> None:
        set_condition(status, c.COMPLETE if outcome == SUCCEEDED else c.FAILED, True, reason, message, now)

    def set_suspended(self, status: Obj, title: str, now: datetime) -> Event | None:
        if st.is_true(status, c.SUSPENDED):
            return None
        set_condition(status, c.SUSPENDED, True, c.REASON_SUSPENDED, c.MESSAGE_SUSPENDED, now)
        return c.REASON_SUSPENDED, c.MESSAGE_SUSPENDED

    def set_resumed(self, status: Obj, title: str, now: datetime) -> Event | None:
        if not st.is_true(status, c.SUSPENDED):
            return None
        set_condition(status, c.SUSPENDED, False, c.REASON_RESUMED, c.MESSAGE_RESUMED, now)
        return c.REASON_RESUMED, c.MESSAGE_RESUMED

    def set_created(self, status: Obj, title: str, now: datetime) -> None:
        """Trainer's conditions have no Created (nor Running)."""

    def set_transient(
        self, status: Obj, ctype: str, true_as: Event | None, cleared_as: Event, now: datetime
    ) -> None:
        """A metav1.Condition, removed once it no longer holds: the Kubeflow SDK reads a
        TrainJob without conditions as running from its pods."""
        if true_as is not None:
            set_condition(status, ctype, True, *true_as, now)
        elif st.get_condition(status, ctype) is not None:
            status["conditions"] = [x for x in status.get("conditions") or [] if x.get("type") != ctype]

    def observe_generation(self, status: Obj, generation: object) -> None:
        """Trainer's status has no observedGeneration."""

    def changed(self, old: Obj, new: Obj) -> bool:
        return old != new

    def write_groups(self, status: Obj, groups: Sequence[GroupTally]) -> None:
        """`jobsStatus` (JobSet's replicatedJobsStatus, which Trainer copies): per replicated
        job, how many of its jobs are ready, succeeded, failed, active, suspended."""
        status["jobsStatus"] = [
            {
                "name": g.name,
                "ready": g.ready,
                "succeeded": g.succeeded,
                "failed": g.failed,
                "active": g.active,
                "suspended": g.suspended,
            }
            for g in groups
        ]

    def restarts(self, status: Obj) -> int:
        """Trainer's status records no restarts: a TrainJob's are the plan's (`Plan.restarts`)."""
        return 0

    def succeeded_as(self, title: str) -> Event:
        return c.REASON_ALL_JOBS_COMPLETED, MESSAGE_COMPLETED  # JobSet's, which Trainer copies

    def deadline_exceeded_as(self, status: Obj, title: str) -> Event:
        return c.REASON_DEADLINE_EXCEEDED, c.MESSAGE_DEADLINE_EXCEEDED


KUBEFLOW = KubeflowStatus()
MPI_OPERATOR = MPIOperatorStatus()
TRAINER = TrainerStatus()
