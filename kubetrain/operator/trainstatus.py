"""A TrainJob's reconcile draft (`TrainJobDraft`), writing its status through Trainer's status
projection (`statusprojection.TRAINER`: metav1.Conditions), and its `jobsStatus` per step.
Pure."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.trainer import constants as c
from kubetrain.jobs.shape import SUCCEEDED
from kubetrain.jobs.trainjob import children as ch
from kubetrain.jobs.trainjob.model import ResolvedTrainJob, Step
from kubetrain.operator.draft import Draft, Observed, Plan, PlannerConfig
from kubetrain.operator.pods import pod_name, pod_phase, pod_ready
from kubetrain.operator.runpolicy import is_active_pod
from kubetrain.operator.statusprojection import TRAINER

Obj = dict[str, Any]


class TrainJobDraft(Draft):
    """A TrainJob's reconcile: the shared `Draft` with Trainer's conditions."""

    def __init__(
        self, job: Mapping[str, Any], observed: Observed, now: datetime, config: PlannerConfig
    ) -> None:
        super().__init__(job, observed, now, config)
        self.name = str((job.get("metadata") or {}).get("name", ""))
        self.title = f"{c.TRAINJOB} {self.name}"

    def terminal(self, outcome: str, reason: str, message: str) -> None:
        """The TrainJob finished (`SUCCEEDED` / `FAILED`): its live pods still running deleted."""
        TRAINER.set_finished(self.status, outcome, reason, message, self.now)
        self.event("Normal" if outcome == SUCCEEDED else "Warning", reason, message)
        self.delete_active()

    def finish(self) -> Plan:
        if self.status != self.old:
            self.plan.status = self.status
        return self.plan


def job_done(resolved: ResolvedTrainJob, step: Step, job_index: int, by_name: Mapping[str, Obj]) -> bool:
    return all(
        pod_phase(by_name.get(ch.pod_name(resolved.name, step.name, job_index, i), {})) == "Succeeded"
        for i in range(step.pods)
    )


def jobs_status(d: TrainJobDraft, resolved: ResolvedTrainJob, failed_steps: set[str]) -> list[Obj]:
    """JobSet's replicatedJobsStatus: per step, how many of its jobs are ready, succeeded, failed,
    active (Trainer copies it into `jobsStatus`)."""
    by_name = {pod_name(p): p for p in d.pods if pod_name(p) not in d.deleting}
    out: list[Obj] = []
    for step in resolved.steps:
        counts = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
        for j in range(step.replicas):
            pods = [by_name.get(ch.pod_name(resolved.name, step.name, j, i)) for i in range(step.pods)]
            if step.name in failed_steps:
                counts["failed"] += 1
            elif job_done(resolved, step, j, by_name):
                counts["succeeded"] += 1
            elif any(p is not None and is_active_pod(p) for p in pods):
                counts["active"] += 1
                if all(p is not None and (pod_ready(p) or pod_phase(p) == "Succeeded") for p in pods):
                    counts["ready"] += 1
        out.append({"name": step.name, **counts})
    return out
