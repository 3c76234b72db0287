"""Where the controller counts a job's moments: one call per moment, for every series that
counts it — kubetrain's `kubetrain_jobs_*_total{kind, namespace}`, the per-tenant
`kubetrain_tenant_jobs_total` and the replaced operators' families (upstreammetrics).

The moments: `created` (the informer adds a job without status), `succeeded`/`failed` (the
status write that gives it the terminal condition), `restarted` (restarts the controller
performed and recorded), `deleted` (the controller deleted the job: ttlSecondsAfterFinished)
and `gone` (the informer saw the job deleted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.operator import upstreammetrics
from kubetrain.operator.tenantmetrics import count_tenant_job
from kubetrain.serving.metrics import JOBS_CREATED, JOBS_FAILED, JOBS_RESTARTED, JOBS_SUCCEEDED

_KUBETRAIN = {
    "created": JOBS_CREATED,
    "succeeded": JOBS_SUCCEEDED,
    "failed": JOBS_FAILED,
    "restarted": JOBS_RESTARTED,
}
_TENANT_EVENTS = ("created", "succeeded", "failed")
EVENTS = (*_KUBETRAIN, "deleted", "gone")


def count_job(job: Mapping[str, Any], event: str, amount: int = 1) -> None:
    """Count `event` (one of EVENTS; `amount` times: restarts) of `job` in every series of it."""
    if event not in EVENTS:
        raise ValueError(f"unknown job event {event!r}: one of {', '.join(EVENTS)}")
    if amount <= 0:
        return
    metric = _KUBETRAIN.get(event)
    if metric is not None:
        meta = job.get("metadata") or {}
        metric.labels(kind=str(job.get("kind")), namespace=str(meta.get("namespace", ""))).inc(amount)
    if event in _TENANT_EVENTS:
        count_tenant_job(job, event)
    upstreammetrics.count(job, event, amount)
