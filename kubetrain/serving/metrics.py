"""Every Prometheus metric kubetrain exports (docs/behaviour.md §10), defined once.

The controller, the kube I/O layer and the webhook import the metric objects from here; the
`HealthServer` (kubetrain.serving.health) serves `REGISTRY` on `/metrics`. Metrics live in their own
registry (plus the standard process/platform collectors) so that tests and embedding
applications are not affected by whatever else registers into prometheus_client's global one.

| metric | type | labels |
|---|---|---|
| `kubetrain_jobs_created_total` | counter | kind, namespace |
| `kubetrain_jobs_succeeded_total` | counter | kind, namespace |
| `kubetrain_jobs_failed_total` | counter | kind, namespace |
| `kubetrain_jobs_restarted_total` | counter | kind, namespace |
| `kubetrain_reconcile_duration_seconds` | histogram | kind |
| `kubetrain_reconcile_plan_duration_seconds` | histogram | kind |
| `kubetrain_reconcile_rate_limiter_wait_seconds` | histogram | kind |
| `kubetrain_reconcile_api_wait_seconds` | histogram | kind |
| `kubetrain_reconcile_own_duration_seconds` | histogram | kind |
| `kubetrain_workqueue_depth` | gauge | queue |
| `kubetrain_webhook_request_duration_seconds` | histogram | webhook, operation, kind, result |
| `kubetrain_api_requests_total` | counter | verb, code |
| `kubetrain_events_dropped_total` | counter | reason |
| `kubetrain_job_progress_ratio` | gauge | kind, namespace, name |
| `kubetrain_job_eta_seconds` | gauge | kind, namespace, name |
| `kubetrain_job_metric` | gauge | kind, namespace, name, metric |
| `kubetrain_status_report_duration_seconds` | histogram | code |
| `kubetrain_gc_pause_seconds` | histogram | generation |
| `kubetrain_gc_frozen_objects` | gauge | |

`result` of a webhook request is one of `allowed`, `patched` (allowed with a JSONPatch),
`denied`, `bad_request` (HTTP 400), `busy` (HTTP 429: too many request bodies in flight),
`aborted` (the body did not arrive in time) or `error` (an unexpected failure, answered as a
denial). The series of a namespace are removed when the namespace is deleted
(`forget_namespace`, called from the webhook's Namespace watch); a job's progress series
(`kubetrain_job_*`) when the job is deleted (`forget_job`, called from the controller's job
watch; kubetrain.operator.progressgauges registers what it exported with `on_forget_job`).
Series defined elsewhere in this registry (the replaced operators' names,
kubetrain.operator.upstreammetrics; controller-runtime's, kubetrain.serving.crmetrics, which
have no namespace) are forgotten through the hooks `on_forget_job` and
`on_forget_namespace` registers.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import (
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)

REGISTRY = CollectorRegistry(auto_describe=True)
REGISTRY.register(PROCESS_COLLECTOR)
REGISTRY.register(PLATFORM_COLLECTOR)

JOBS_CREATED = Counter(
    "kubetrain_jobs_created_total",
    "Jobs seen for the first time by the controller.",
    ["kind", "namespace"],
    registry=REGISTRY,
)
JOBS_SUCCEEDED = Counter(
    "kubetrain_jobs_succeeded_total",
    "Jobs that reached the Succeeded condition.",
    ["kind", "namespace"],
    registry=REGISTRY,
)
JOBS_FAILED = Counter(
    "kubetrain_jobs_failed_total",
    "Jobs that reached the Failed condition.",
    ["kind", "namespace"],
    registry=REGISTRY,
)
JOBS_RESTARTED = Counter(
    "kubetrain_jobs_restarted_total",
    "Restarts performed by the controller (a pod recreated after a retryable failure, a whole-job restart).",
    ["kind", "namespace"],
    registry=REGISTRY,
)
RECONCILE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
RECONCILE_DURATION = Histogram(
    "kubetrain_reconcile_duration_seconds",
    "Time spent in one reconcile of one job, including the API writes of its plan.",
    ["kind"],
    buckets=RECONCILE_BUCKETS,
    registry=REGISTRY,
)
RECONCILE_PLAN_DURATION = Histogram(
    "kubetrain_reconcile_plan_duration_seconds",
    "Time spent deciding one reconcile (cache reads and the pure planner), without its API writes.",
    ["kind"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
    registry=REGISTRY,
)
# What one reconcile's duration is made of (kubetrain_reconcile_duration_seconds, same buckets): its
# API requests waiting for the client-side rate limiter (--qps/--burst), in flight, and the rest.
RECONCILE_RATE_LIMITER_WAIT = Histogram(
    "kubetrain_reconcile_rate_limiter_wait_seconds",
    "Wall-clock time within one reconcile during which at least one of its API requests waited "
    "for the client-side rate limiter.",
    ["kind"],
    buckets=RECONCILE_BUCKETS,
    registry=REGISTRY,
)
RECONCILE_API_WAIT = Histogram(
    "kubetrain_reconcile_api_wait_seconds",
    "Wall-clock time within one reconcile during which at least one of its API requests was in "
    "flight (sent, answer not yet read) and none waited for the rate limiter.",
    ["kind"],
    buckets=RECONCILE_BUCKETS,
    registry=REGISTRY,
)
RECONCILE_OWN_DURATION = Histogram(
    "kubetrain_reconcile_own_duration_seconds",
    "One reconcile's duration minus its rate-limiter and API waits: the decision, the operator's "
    "own work between requests and its turns waiting for the event loop.",
    ["kind"],
    buckets=RECONCILE_BUCKETS,
    registry=REGISTRY,
)
# Training progress reported by the jobs' pods (kubetrain.progress; series capped there).
JOB_PROGRESS = Gauge(
    "kubetrain_job_progress_ratio",
    "The job's last reported progress, 0 to 1 (status.trainerStatus.progressPercentage / 100).",
    ["kind", "namespace", "name"],
    registry=REGISTRY,
)
JOB_ETA = Gauge(
    "kubetrain_job_eta_seconds",
    "The job's last reported estimate of its remaining seconds.",
    ["kind", "namespace", "name"],
    registry=REGISTRY,
)
JOB_METRIC = Gauge(
    "kubetrain_job_metric",
    "Each numeric metric the job last reported (status.trainerStatus.metrics), by name.",
    ["kind", "namespace", "name", "metric"],
    registry=REGISTRY,
)
STATUS_REPORT_DURATION = Histogram(
    "kubetrain_status_report_duration_seconds",
    "Time to answer one progress report on the status endpoint (after the TLS handshake), by HTTP code.",
    ["code"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    registry=REGISTRY,
)
QUEUE_DEPTH = Gauge(
    "kubetrain_workqueue_depth",
    "Keys waiting in the work queue (ready now, not counting delayed requeues).",
    ["queue"],
    registry=REGISTRY,
)
WEBHOOK_REQUEST_DURATION = Histogram(
    "kubetrain_webhook_request_duration_seconds",
    "Time to answer one AdmissionReview, by webhook (mutate|validate), operation, kind and result.",
    ["webhook", "operation", "kind", "result"],
    # Up to 30 s, the longest timeoutSeconds a webhook configuration may have.
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY,
)
API_REQUESTS = Counter(
    "kubetrain_api_requests_total",
    "Requests made to the Kubernetes API server, by verb and HTTP status code.",
    ["verb", "code"],
    registry=REGISTRY,
)
# Events the EventRecorder (kubetrain.kube.events) did not write: reason "queue_full", its bound
# of pending writes reached.
EVENTS_DROPPED = Counter(
    "kubetrain_events_dropped_total",
    "Events not written, by reason: queue_full (the bound of pending Event writes reached, the "
    "API server slow or unavailable).",
    ["reason"],
    registry=REGISTRY,
)
# The cyclic garbage collector stops the whole process; kubetrain.serving.gcpause observes each
# collection, kubetrain.serving.gcfreeze decides when to freeze the long-lived objects.
GC_PAUSE = Histogram(
    "kubetrain_gc_pause_seconds",
    "Time the process stood still in one collection of Python's cyclic garbage collector, by "
    "the oldest generation collected (2: a full collection).",
    ["generation"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    registry=REGISTRY,
)
GC_FROZEN = Gauge(
    "kubetrain_gc_frozen_objects",
    "Objects frozen out of the collector's scans (gc.freeze; freed by reference counting only), "
    "as the freeze policy last counted them: exact at its counts, plus each full collection's "
    "survivors since.",
    registry=REGISTRY,
)

# Who exported series of a single job: called with (kind, namespace, name) when it is deleted.
_job_forgetters: list[Callable[[str, str, str], None]] = []


def on_forget_job(hook: Callable[[str, str, str], None]) -> None:
    """Register `hook(kind, namespace, name)`, called by `forget_job` (once per hook)."""
    if hook not in _job_forgetters:
        _job_forgetters.append(hook)


def forget_job(kind: str, namespace: str, name: str) -> None:
    """Remove the series of a deleted job (its reported progress, ETA and metrics)."""
    for hook in list(_job_forgetters):
        hook(kind, namespace, name)


NAMESPACED_METRICS = (JOBS_CREATED, JOBS_SUCCEEDED, JOBS_FAILED, JOBS_RESTARTED)

# Who exported further series of a namespace: called with its name when it is deleted.
_namespace_forgetters: list[Callable[[str], int]] = []


def on_forget_namespace(hook: Callable[[str], int]) -> None:
    """Register `hook(namespace)` -> series removed, called by `forget_namespace` (once per hook)."""
    if hook not in _namespace_forgetters:
        _namespace_forgetters.append(hook)


def forget_namespace(namespace: str) -> int:
    """Remove every series of a (deleted) namespace; returns how many were removed."""
    removed = sum(hook(namespace) for hook in list(_namespace_forgetters))
    for metric in NAMESPACED_METRICS:
        names = metric._labelnames
        position = names.index("namespace")
        for labels in [key for key in list(metric._metrics) if key[position] == namespace]:
            metric.remove(*labels)
            removed += 1
    return removed


__all__ = [
    "API_REQUESTS",
    "EVENTS_DROPPED",
    "GC_FROZEN",
    "GC_PAUSE",
    "JOBS_CREATED",
    "JOBS_FAILED",
    "JOBS_RESTARTED",
    "JOBS_SUCCEEDED",
    "QUEUE_DEPTH",
    "RECONCILE_API_WAIT",
    "RECONCILE_DURATION",
    "RECONCILE_OWN_DURATION",
    "RECONCILE_PLAN_DURATION",
    "RECONCILE_RATE_LIMITER_WAIT",
    "REGISTRY",
    "WEBHOOK_REQUEST_DURATION",
    "forget_job",
    "forget_namespace",
    "on_forget_job",
    "on_forget_namespace",
]
