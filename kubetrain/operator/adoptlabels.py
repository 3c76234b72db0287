"""The labels kubetrain gives the pods of a job it creates itself, for adopting the pods another
operator made (`adoption.py`, `SlotLabels`): the job prepared once as the planner prepares it
(`prepare.py`) and the pod of a slot built by `desired.py` with the controller's gang scheduler
and the job's attempt (`status.jobRestarts`), less the labels its pod template gives it the same
value (the other operator copied those already, and a running pod keeps the ones it was made
with). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.gangschedulers import NONE, defaults_min_available
from kubetrain.jobs.tenancy import tenancy_labels
from kubetrain.operator.desired import DesiredChildren, desired_children
from kubetrain.operator.prepare import prepare_job
from kubetrain.operator.restarts import job_attempt


class CreatedLabels:
    """The labels kubetrain gives the pods of one stored job when it creates them itself."""

    def __init__(self, job: Mapping[str, Any], *, gang_scheduler: str = NONE) -> None:
        prepared = prepare_job(job, gang_scheduling=defaults_min_available(gang_scheduler))
        shape = prepared.shape if prepared.valid else None
        self._desired: DesiredChildren | None = (
            desired_children(shape, gang_scheduler=gang_scheduler) if shape is not None else None
        )
        status = job.get("status")
        self._attempt = job_attempt(status if isinstance(status, Mapping) else {})
        self.tenancy = tenancy_labels(job)

    def pod(self, replica_type: str, index: int) -> dict[str, str] | None:
        """The labels of pod `index` of `replica_type` (the kind's spelling) that its template
        does not already give it, or None when the job has no such replica type laid out."""
        desired = self._desired
        if desired is None or replica_type not in desired.layout.replicas:
            return None
        pod = desired.pod(replica_type, index, attempt=self._attempt)
        labels: dict[str, str] = pod["metadata"]["labels"]
        template = desired.layout.replicas[replica_type].template.get("metadata") or {}
        own = template.get("labels") if isinstance(template, Mapping) else None
        own = own if isinstance(own, Mapping) else {}
        return {k: v for k, v in labels.items() if k not in own or own[k] != v}
