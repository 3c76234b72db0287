"""controller-runtime's standard series, served in kubetrain's registry under their exact names.

Operators built on controller-runtime (Kubeflow training-operator, Trainer, KubeDL) export these,
and generic controller-runtime dashboards and alerts read them. Names, label names, help texts and
histogram buckets are controller-runtime's:

- controller series: sigs.k8s.io/controller-runtime pkg/internal/controller/metrics/metrics.go,
  set where pkg/internal/controller/controller.go sets them (`initMetrics`,
  `processNextWorkItem`, `reconcileHandler`, `Reconcile`); kubetrain.operator.loop is that point.
- work queue series: pkg/internal/metrics/workqueue.go as of v0.19 (the release Kubeflow
  training-operator 1.9 builds with: labels `name`, `controller`, both the queue's name, as its
  `WorkqueueMetricsProvider` sets them; no `priority` label on the depth), updated where client-go's
  util/workqueue (queue.go `Add`/`Get`/`Done`, delaying_queue.go `AddAfter`, metrics.go
  `defaultQueueMetrics`) updates them; kubetrain.kube.workqueue is that point.
- webhook series: pkg/webhook/internal/metrics/metrics.go (`InstrumentedHook`), label `webhook`
  the URL path the API server calls; kubetrain.webhook.server's middleware is that point.

Which `controller` a reconcile counts under is kubetrain.operator.controllernames'.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from kubetrain.serving.metrics import REGISTRY


def _exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """prometheus.ExponentialBuckets: each bucket the previous one times `factor` (same floats)."""
    buckets = [start]
    while len(buckets) < count:
        buckets.append(buckets[-1] * factor)
    return tuple(buckets)


# prometheus.ExponentialBuckets(10e-9, 10, 12): 10 ns to 1000 s.
EXPONENTIAL_BUCKETS = _exponential_buckets(10e-9, 10, 12)
RECONCILE_TIME_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
TERMINAL_RECONCILE_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_PANICS = Counter(
    "controller_runtime_reconcile_panics_total",
    "Total number of reconciliation panics per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=RECONCILE_TIME_BUCKETS,
    registry=REGISTRY,
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
    registry=REGISTRY,
)

WORKQUEUE_DEPTH = Gauge(
    "workqueue_depth", "Current depth of workqueue", ["name", "controller"], registry=REGISTRY
)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds_total",
    "Total number of adds handled by workqueue",
    ["name", "controller"],
    registry=REGISTRY,
)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name", "controller"],
    buckets=EXPONENTIAL_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name", "controller"],
    buckets=EXPONENTIAL_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
    "threads by observing the rate at which this increases.",
    ["name", "controller"],
    registry=REGISTRY,
)
WORKQUEUE_LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["name", "controller"],
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries_total",
    "Total number of retries handled by workqueue",
    ["name", "controller"],
    registry=REGISTRY,
)

WEBHOOK_LATENCY = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests",
    ["webhook"],
    buckets=EXPONENTIAL_BUCKETS,
    registry=REGISTRY,
)
WEBHOOK_REQUESTS = Counter(
    "controller_runtime_webhook_requests_total",
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
    registry=REGISTRY,
)
WEBHOOK_IN_FLIGHT = Gauge(
    "controller_runtime_webhook_requests_in_flight",
    "Current number of admission requests being served.",
    ["webhook"],
    registry=REGISTRY,
)


@dataclass(frozen=True)
class ControllerSeries:
    """One controller's series, looked up once (a reconcile then pays no label lookup)."""

    success: Counter
    error: Counter
    requeue: Counter
    requeue_after: Counter
    errors: Counter
    terminal_errors: Counter
    panics: Counter
    time: Histogram
    max_workers: Gauge


def controller_series(controller: str, workers: int) -> ControllerSeries:
    """The series of `controller`, initialised as controller-runtime's `initMetrics` does: every
    counter present at 0, max_concurrent_reconciles = `workers`. (active_workers is read from
    the loop when scraped: `ACTIVE_WORKERS.labels(controller).set_function(...)`.)"""
    series = ControllerSeries(
        success=RECONCILE_TOTAL.labels(controller, "success"),
        error=RECONCILE_TOTAL.labels(controller, "error"),
        requeue=RECONCILE_TOTAL.labels(controller, "requeue"),
        requeue_after=RECONCILE_TOTAL.labels(controller, "requeue_after"),
        errors=RECONCILE_ERRORS.labels(controller),
        terminal_errors=TERMINAL_RECONCILE_ERRORS.labels(controller),
        panics=RECONCILE_PANICS.labels(controller),
        time=RECONCILE_TIME.labels(controller),
        max_workers=MAX_CONCURRENT_RECONCILES.labels(controller),
    )
    series.max_workers.set(workers)
    return series


@dataclass(frozen=True)
class QueueSeries:
    """One work queue's series (`name` and `controller` both the queue's name)."""

    depth: Gauge
    adds: Counter
    queue_duration: Histogram
    work_duration: Histogram
    unfinished: Gauge
    longest: Gauge
    retries: Counter


def queue_series(name: str) -> QueueSeries:
    return QueueSeries(
        depth=WORKQUEUE_DEPTH.labels(name, name),
        adds=WORKQUEUE_ADDS.labels(name, name),
        queue_duration=WORKQUEUE_QUEUE_DURATION.labels(name, name),
        work_duration=WORKQUEUE_WORK_DURATION.labels(name, name),
        unfinished=WORKQUEUE_UNFINISHED_WORK.labels(name, name),
        longest=WORKQUEUE_LONGEST_RUNNING.labels(name, name),
        retries=WORKQUEUE_RETRIES.labels(name, name),
    )


__all__ = [
    "ACTIVE_WORKERS",
    "EXPONENTIAL_BUCKETS",
    "MAX_CONCURRENT_RECONCILES",
    "RECONCILE_ERRORS",
    "RECONCILE_PANICS",
    "RECONCILE_TIME",
    "RECONCILE_TOTAL",
    "TERMINAL_RECONCILE_ERRORS",
    "WEBHOOK_IN_FLIGHT",
    "WEBHOOK_LATENCY",
    "WEBHOOK_REQUESTS",
    "ControllerSeries",
    "QueueSeries",
    "controller_series",
    "queue_series",
]
