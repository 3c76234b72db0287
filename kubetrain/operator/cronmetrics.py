"""Prometheus series per cron (TrainingCron and KubeDL's Cron), with the per-job series' cap.

- `kubetrain_cron_jobs_created_total{kind, namespace, name}`: jobs the cron created
  (`SuccessfulCreate`);
- `kubetrain_cron_jobs_failed_to_create_total{kind, namespace, name}`: creates that failed
  (`FailedCreate`: an API error, or the job's name taken by an object the cron does not own);
- `kubetrain_cron_jobs_skipped_total{kind, namespace, name}`: scheduled times not started
  because a job was still active under concurrencyPolicy Forbid (`JobAlreadyActive`), each
  scheduled time once however often the cron is looked at while it waits;
- `kubetrain_cron_last_schedule_timestamp_seconds{kind, namespace, name}`: the cron's
  `status.lastScheduleTime` as Unix seconds.

Crons are created by users, so as for the progress series (kubetrain.operator.progressgauges) at most
`MAX_CRONS` crons have series: past that the cron heard from least recently loses all of its
series (its counters restart from 0 if it comes back, which Prometheus' rate() treats as a
reset). `forget` removes a deleted cron's series.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime

from prometheus_client import Counter, Gauge

from kubetrain.serving.metrics import REGISTRY

MAX_CRONS = 2000  # as kubetrain.operator.progressgauges.MAX_JOBS
LABELS = ["kind", "namespace", "name"]

CRON_JOBS_CREATED = Counter(
    "kubetrain_cron_jobs_created_total",
    "Jobs a cron created on its schedule.",
    LABELS,
    registry=REGISTRY,
)
CRON_JOBS_FAILED = Counter(
    "kubetrain_cron_jobs_failed_to_create_total",
    "Jobs a cron failed to create (an API error, or the job's name taken by another object).",
    LABELS,
    registry=REGISTRY,
)
CRON_JOBS_SKIPPED = Counter(
    "kubetrain_cron_jobs_skipped_total",
    "Scheduled times a cron did not start because a job was active under concurrencyPolicy Forbid.",
    LABELS,
    registry=REGISTRY,
)
CRON_LAST_SCHEDULE = Gauge(
    "kubetrain_cron_last_schedule_timestamp_seconds",
    "The cron's status.lastScheduleTime as Unix seconds.",
    LABELS,
    registry=REGISTRY,
)
SERIES = (CRON_JOBS_CREATED, CRON_JOBS_FAILED, CRON_JOBS_SKIPPED, CRON_LAST_SCHEDULE)

Cron = tuple[str, str, str]  # (kind, namespace, name)

# Per cron with series, least recently heard from first: the last scheduled time counted as skipped.
_crons: OrderedDict[Cron, datetime | None] = OrderedDict()
_lock = threading.Lock()


def _touch(cron: Cron) -> datetime | None:
    """Mark the cron as heard from now (evicting the oldest past the cap); its last skipped time."""
    last = _crons.pop(cron, None)
    _crons[cron] = last
    while len(_crons) > MAX_CRONS:
        _remove(next(iter(_crons)))
    return last


def _remove(cron: Cron) -> None:
    _crons.pop(cron, None)
    for series in SERIES:
        with contextlib.suppress(KeyError):
            series.remove(*cron)


def observe(
    cron: Cron, reasons: Iterable[str], skipped: datetime | None, last_schedule: datetime | None
) -> None:
    """One pass of the cron controller: the reasons of the events it recorded, the scheduled time
    it skipped under Forbid (None: none) and the cron's lastScheduleTime after the pass."""
    with _lock:
        last_skipped = _touch(cron)
        for reason in reasons:
            if reason == "SuccessfulCreate":
                CRON_JOBS_CREATED.labels(*cron).inc()
            elif reason == "FailedCreate":
                CRON_JOBS_FAILED.labels(*cron).inc()
        if skipped is not None and skipped != last_skipped:
            CRON_JOBS_SKIPPED.labels(*cron).inc()
            _crons[cron] = skipped
        if last_schedule is not None:
            CRON_LAST_SCHEDULE.labels(*cron).set(last_schedule.timestamp())


def forget(cron: Cron) -> None:
    """The cron was deleted: drop its series."""
    with _lock:
        _remove(cron)
