"""Prometheus series for reported progress, with a cardinality cap, from the jobs' status.

The controller calls `observe_job(job)` for every job its informer adds or updates: the series
follow `status.trainerStatus` (whichever process or replica wrote it — the status endpoint may
run in a child process, `--status-server-process`), are rebuilt from the jobs' status when the
operator restarts, and are exported by the replica that runs the controller only.

`kubetrain_job_progress_ratio` and `kubetrain_job_eta_seconds` have one series per job that
reported; `kubetrain_job_metric` one per (job, metric name) for metrics whose value is a number
(others are only in the job's status). At most `MAX_METRICS_PER_JOB` metric names per job (the
first reported) and `MAX_JOBS` jobs are exported; past that the job heard from least recently
loses its series. `forget(kind, namespace, name)` removes a job's series: called through
`kubetrain.serving.metrics.forget_job` when the controller sees the job deleted. A finished job
keeps its last values until then (the job's other series, the kind/namespace counters, stay too).
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from typing import Any

from kubetrain.serving.metrics import JOB_ETA, JOB_METRIC, JOB_PROGRESS, on_forget_job

MAX_JOBS = 2000
MAX_METRICS_PER_JOB = 16

_jobs: OrderedDict[tuple[str, str, str], set[str]] = OrderedDict()


def _number(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def observe(kind: str, namespace: str, name: str, report: dict[str, Any]) -> None:
    job = (kind, namespace, name)
    names = _jobs.pop(job, set())
    _jobs[job] = names
    while len(_jobs) > MAX_JOBS:
        forget(*next(iter(_jobs)))
    percent = report.get("progressPercentage")
    if percent is not None:
        JOB_PROGRESS.labels(kind, namespace, name).set(percent / 100)
    eta = report.get("estimatedRemainingSeconds")
    if eta is not None:
        JOB_ETA.labels(kind, namespace, name).set(eta)
    for metric in report.get("metrics") or []:
        value = _number(metric.get("value"))
        if value is None:
            continue
        if metric["name"] not in names and len(names) >= MAX_METRICS_PER_JOB:
            continue
        names.add(metric["name"])
        JOB_METRIC.labels(kind, namespace, name, metric["name"]).set(value)


def observe_job(job: dict[str, Any]) -> None:
    """The series of `job` from its `status.trainerStatus` (nothing when it has none)."""
    report = (job.get("status") or {}).get("trainerStatus")
    if not isinstance(report, dict):
        return
    meta = job.get("metadata") or {}
    observe(str(job.get("kind", "")), meta.get("namespace", ""), meta.get("name", ""), report)


def forget(kind: str, namespace: str, name: str) -> None:
    names = _jobs.pop((kind, namespace, name), set())
    for gauge in (JOB_PROGRESS, JOB_ETA):
        with contextlib.suppress(KeyError):
            gauge.remove(kind, namespace, name)
    for metric in names:
        with contextlib.suppress(KeyError):
            JOB_METRIC.remove(kind, namespace, name, metric)


on_forget_job(forget)
