"""KubeDL's per-job launch-delay histograms for training.kubedl.io jobs, under KubeDL's names,
help, labels and buckets (`pkg/metrics/job_metrics.go`, `FirstPodLaunchDelaySeconds` and
`AllPodsLaunchDelaySeconds`, called from `JobController.ReconcileJobs` in
`pkg/job_controller/job.go`):

- `kubedl_jobs_first_pod_launch_delay_seconds{kind, name, namespace, uid}`: from the job's
  `creationTimestamp` to the earliest `lastTransitionTime` of the `Ready` condition among its
  pods in phase Running, once the job has a `Running` condition that is True;
- `kubedl_jobs_all_pods_launch_delay_seconds{kind, name, namespace, uid}`: from the job's
  `creationTimestamp` to the latest such time, once every pod the job asks for (the sum of its
  replica map's `replicas`) is active, Running and Ready, the job Running.

`kind` is the kind as KubeDL's controllers pass it to `NewJobMetrics` (`PyTorchJob`): these two
use `JobMetrics.kind`, not the lower-cased label of KubeDL's counters. Buckets are Go's
`prometheus.DefBuckets` (KubeDL set none), not Python's default.

Decision: each is observed once per job (uid), at the first reconcile that meets its rule.
KubeDL called the first-pod one at every sync of a Running job (its `IsCreated(oldStatus)`
guard stays true: the Created condition is never cleared) and the all-pods one only at the sync
where the active count first reached the total, skipping it for good when a pod was still
Pending then; one observation per job is what both meant ("when job state transit from created
to running"). A pod counts only with `Ready` True (KubeDL took the condition's time whatever
its status).

Bound: at most `MAX_LAUNCH_DELAY_JOBS` jobs have series at once (`upstreammetrics.SeriesBound`,
the mechanism of `mpi_operator_job_info`): each reconcile of a KubeDL job marks it used, and past
the bound the job reconciled least recently loses both series and its record; should it be
reconciled again while Running, it is observed again, in new series. A deleted job's series go
(`forget_job`, through `on_forget_job`), and so do a deleted namespace's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from prometheus_client import Histogram

from kubetrain.api.groups import KUBEDL_GROUP, group_of
from kubetrain.api.metatime import parse_time
from kubetrain.api.podresources import total_replicas
from kubetrain.frameworks.registry import get_framework
from kubetrain.operator.status import get_condition, is_true
from kubetrain.operator.upstreammetrics import SeriesBound
from kubetrain.serving.metrics import REGISTRY, on_forget_job, on_forget_namespace

Obj = Mapping[str, Any]
# Go's prometheus.DefBuckets, which KubeDL's HistogramOpts left in place.
GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
MAX_LAUNCH_DELAY_JOBS = 2000
LABELS = ("kind", "name", "namespace", "uid")

FIRST_POD_LAUNCH_DELAY = Histogram(
    "kubedl_jobs_first_pod_launch_delay_seconds",
    "Histogram for recording launch delay duration(from job created to first pod running).",
    LABELS,
    buckets=GO_DEFAULT_BUCKETS,
    registry=REGISTRY,
)
ALL_PODS_LAUNCH_DELAY = Histogram(
    "kubedl_jobs_all_pods_launch_delay_seconds",
    "Histogram for recording sync launch delay duration(from job created to all pods running).",
    LABELS,
    buckets=GO_DEFAULT_BUCKETS,
    registry=REGISTRY,
)


def _active(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")


def _ready_time(pod: Obj) -> str | None:
    """The Ready condition's lastTransitionTime of a pod in phase Running that is Ready."""
    status = pod.get("status") or {}
    ready = get_condition(status, "Ready") if status.get("phase") == "Running" else None
    return ready.get("lastTransitionTime") if ready is not None and ready.get("status") == "True" else None


def ready_since(pod: Obj) -> datetime | None:
    """When the pod, in phase Running, became Ready (its Ready condition True); else None."""
    return parse_time(_ready_time(pod))


def first_pod_ready(pods: Iterable[Obj]) -> datetime | None:
    """The earliest time an active pod became Ready (None: none is Running and Ready)."""
    times = [t for pod in pods if _active(pod) and (t := ready_since(pod)) is not None]
    return min(times, default=None)


def all_pods_ready(pods: Iterable[Obj], total: int) -> datetime | None:
    """The time the last of the job's `total` pods became Ready, once exactly `total` pods are
    active and each is Running and Ready; else None. Timestamps are parsed only then: a job
    waiting for its last pods costs one pass over the pods' dicts per reconcile."""
    stamps = []
    for pod in pods:
        if not _active(pod):
            continue
        stamp = _ready_time(pod)
        if stamp is None:
            return None
        stamps.append(stamp)
    if total <= 0 or len(stamps) != total:
        return None
    times = [parse_time(stamp) for stamp in stamps]
    return max((t for t in times if t is not None), default=None) if None not in times else None


def wanted_pods(job: Obj) -> int | None:
    """The pods the job asks for: the sum of its replica map's `replicas` (None: unknown)."""
    framework = get_framework(str(job.get("kind")))
    spec = job.get("spec")
    if framework is None or not isinstance(spec, Mapping):
        return None
    return total_replicas(spec.get(framework.replica_field))


def launch_delays(
    job: Obj, status: Obj | None, pods: Sequence[Obj], skip: Iterable[str] = ()
) -> tuple[float | None, float | None]:
    """(first pod, all pods) launch delay in seconds the job shows now, None for one not met or
    in `skip` ("first", "all": already observed)."""
    created = parse_time((job.get("metadata") or {}).get("creationTimestamp"))
    if created is None or not is_true(status or {}, "Running"):
        return None, None
    first = None if "first" in skip else first_pod_ready(pods)
    total = None if "all" in skip else wanted_pods(job)
    last = all_pods_ready(pods, total) if total is not None else None
    return (
        None if first is None else (first - created).total_seconds(),
        None if last is None else (last - created).total_seconds(),
    )


Key = tuple[str, str, str, str]  # LABELS' values
_observed: dict[Key, set[str]] = {}  # which of "first", "all" a job's series hold


def _remove(key: Key) -> None:
    _observed.pop(key, None)
    for histogram in (FIRST_POD_LAUNCH_DELAY, ALL_PODS_LAUNCH_DELAY):
        with contextlib.suppress(KeyError):
            histogram.remove(*key)


JOBS = SeriesBound[Key](MAX_LAUNCH_DELAY_JOBS, _remove)


def observe(job: Obj, status: Obj | None, pods: Sequence[Obj]) -> None:
    """At a reconcile of `job` (its status as the reconcile leaves it, its pods from the cache):
    observe the launch delays it newly shows, once per job; other groups' jobs have none."""
    if group_of(job.get("apiVersion")) != KUBEDL_GROUP:
        return
    meta = job.get("metadata") or {}
    key = (
        str(job.get("kind")),
        str(meta.get("name", "")),
        str(meta.get("namespace", "")),
        str(meta.get("uid", "")),
    )
    done = _observed.get(key, set())
    if len(done) == 2:
        JOBS.touch(key)
        return
    first, last = launch_delays(job, status, pods, skip=done)
    todo = [
        (name, histogram, delay)
        for name, histogram, delay in (
            ("first", FIRST_POD_LAUNCH_DELAY, first),
            ("all", ALL_PODS_LAUNCH_DELAY, last),
        )
        if delay is not None and name not in done
    ]

    def set_series() -> None:
        for name, histogram, delay in todo:
            histogram.labels(*key).observe(delay)
            _observed.setdefault(key, set()).add(name)

    if todo or key in _observed:
        JOBS.touch(key, set_series)


def forget_job(kind: str, namespace: str, name: str) -> None:
    """A deleted job's series go (every uid it had under that name)."""
    JOBS.forget_where(lambda key: key[0] == kind and key[1] == name and key[2] == namespace)


def forget_namespace(namespace: str) -> int:
    return JOBS.forget_where(lambda key: key[2] == namespace)


on_forget_job(forget_job)
on_forget_namespace(forget_namespace)
