"""The Prometheus series of the operators kubetrain replaces, under their own names and labels,
so that dashboards and alert rules written against them keep working after a takeover.

Each job counts in the family of the operator that served its API group:

- kubeflow.org, every kind but an mpi-operator MPIJob — training-operator v1.9
  (`pkg/common/metrics.go`): `training_operator_jobs_{created,deleted,successful,failed,
  restarted}_total{job_namespace, framework}`, `framework` being the controller's
  `GetFrameworkName()` (`pytorch`, `tensorflow`, `mpi`, `xgboost`, `paddle`, `jax`; `mxnet`
  for an MXJob, as the releases that still had it): each Framework's `kubeflow_framework_name`.
- kubeflow.org MPIJob created at v2beta1 (or without the created-api-version annotation:
  frameworks/mpilabels.mpi_operator_convention) — mpi-operator v0.8.2
  (`pkg/controller/mpi_job_controller.go`): the unlabelled counters
  `mpi_operator_jobs_{created,successful,failed}_total` and the gauge
  `mpi_operator_job_info{launcher, namespace}` = 1.
- training.kubedl.io — KubeDL (`pkg/metrics/job_metrics.go`): `kubedl_jobs_{created,deleted,
  successful,failed,restarted}{kind}` (no `_total`: KubeDL's names; `kind` is the kind in lower
  case, `pytorchjob`). prometheus_client appends `_total` to any counter's name, so these are
  exposed untyped (`# TYPE kubedl_jobs_created untyped`); PromQL treats them alike.

When each is counted (`count(job, event, amount)`, called where kubetrain_jobs_* counts the
same moment, kubetrain.operator.jobcounts):

- created: the controller sees a job without status for the first time (upstream: each informer
  create event, which also recounted every existing job at each operator restart);
- successful/failed: the status write that gives the job its Succeeded/Failed condition, once,
  whatever the reason (training-operator did not count the failures of a backoff limit, an
  active deadline or a non-retryable exit code, KubeDL counted a job's first Restarting as
  failed too);
- restarted: each restart kubetrain performs (a failed pod recreated, a whole-job restart), as
  `kubetrain_jobs_restarted_total` (training-operator counted each failed pod recreated, and
  again at each status update while a replica stayed failed; KubeDL once per Restarting episode);
- deleted: training-operator — the operator deleted the job itself (ttlSecondsAfterFinished,
  `CleanupJob` → `DeleteJob`); KubeDL — the job was seen deleted, by anyone.

`mpi_operator_job_info{launcher="<job>-launcher"}` is set when the controller sees the job's
Launcher pod (upstream: at each sync once its launcher Job exists), removed when the job is
deleted (upstream never removed it), and bounded like the per-job progress series: at most
`MAX_JOB_INFO` jobs, the one seen least recently losing its series past that (`SeriesBound`,
which KubeDL's per-job launch-delay histograms share: kubetrain.operator.kubedllaunch). The
training operator's series of a deleted namespace go with kubetrain's (`forget_namespace`).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from prometheus_client import Counter, Gauge
from prometheus_client.core import Metric, UnknownMetricFamily
from prometheus_client.registry import Collector

from kubetrain.api.groups import KUBEDL_GROUP, KUBEFLOW_GROUP, group_of
from kubetrain.api.labels import (
    KUBEFLOW_LABEL_JOB_NAME,
    KUBEFLOW_LABEL_JOB_ROLE,
    KUBEFLOW_LABEL_OPERATOR_NAME,
)
from kubetrain.frameworks.mpi import FRAMEWORK as MPI_FRAMEWORK
from kubetrain.frameworks.mpilabels import MPI_OPERATOR_NAME, mpi_operator_convention
from kubetrain.frameworks.registry import get_framework
from kubetrain.serving.metrics import REGISTRY, on_forget_job, on_forget_namespace

MAX_JOB_INFO = 2000
K = TypeVar("K")
MPI_KIND = MPI_FRAMEWORK.kind
LAUNCHER_SUFFIX = "-launcher"  # mpi-operator's launcherSuffix

TRAINING_OPERATOR = "training_operator"
MPI_OPERATOR = "mpi_operator"
KUBEDL = "kubedl"

# kubetrain's moment -> the upstream name's middle word.
_UPSTREAM_EVENT = {
    "created": "created",
    "deleted": "deleted",
    "succeeded": "successful",
    "failed": "failed",
    "restarted": "restarted",
}


def _training_operator_counter(event: str, help_text: str) -> Counter:
    return Counter(
        f"training_operator_jobs_{event}_total",
        help_text,
        ["job_namespace", "framework"],
        registry=REGISTRY,
    )


TRAINING_OPERATOR_COUNTERS = {
    "created": _training_operator_counter("created", "Counts number of jobs created"),
    "deleted": _training_operator_counter("deleted", "Counts number of jobs deleted"),
    "successful": _training_operator_counter("successful", "Counts number of jobs successful"),
    "failed": _training_operator_counter("failed", "Counts number of jobs failed"),
    "restarted": _training_operator_counter("restarted", "Counts number of jobs restarted"),
}
MPI_OPERATOR_COUNTERS = {
    "created": Counter(
        "mpi_operator_jobs_created_total", "Counts number of MPI jobs created", registry=REGISTRY
    ),
    "successful": Counter(
        "mpi_operator_jobs_successful_total", "Counts number of MPI jobs successful", registry=REGISTRY
    ),
    "failed": Counter(
        "mpi_operator_jobs_failed_total", "Counts number of MPI jobs failed", registry=REGISTRY
    ),
}
MPI_JOB_INFO = Gauge(
    "mpi_operator_job_info", "Information about MPIJob", ["launcher", "namespace"], registry=REGISTRY
)

_KUBEDL_HELP = {  # by event: KubeDL's help text
    "created": "Counts number of jobs created",
    "deleted": "Counts number of jobs deleted",
    "successful": "Counts number of jobs successfully finished",
    "failed": "Counts number of jobs failed",
    "restarted": "Counts number of jobs restarted",
}


KUBEDL_EVENTS = tuple(_KUBEDL_HELP)


class KubeDLCounters(Collector):
    """`kubedl_jobs_<event>{kind}` under KubeDL's exact names (untyped: see the module docstring)."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def inc(self, event: str, kind: str, amount: float = 1) -> None:
        with self._lock:
            self._values[(event, kind)] = self._values.get((event, kind), 0.0) + amount

    def describe(self) -> Iterator[Metric]:
        for event, text in _KUBEDL_HELP.items():
            yield UnknownMetricFamily(f"kubedl_jobs_{event}", text, labels=["kind"])

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            values = sorted(self._values.items())
        for event, text in _KUBEDL_HELP.items():
            family = UnknownMetricFamily(f"kubedl_jobs_{event}", text, labels=["kind"])
            for (counted, kind), value in values:
                if counted == event:
                    family.add_metric([kind], value)
            yield family


KUBEDL_COUNTERS = KubeDLCounters()
REGISTRY.register(KUBEDL_COUNTERS)


def family_of(job: Mapping[str, Any]) -> str | None:
    """Whose series a job counts in: TRAINING_OPERATOR, MPI_OPERATOR, KUBEDL or None."""
    group = group_of(job.get("apiVersion"))
    if group == KUBEDL_GROUP:
        return KUBEDL
    if group != KUBEFLOW_GROUP:
        return None
    if mpi_operator_convention(job):
        return MPI_OPERATOR
    framework = get_framework(str(job.get("kind")))
    return TRAINING_OPERATOR if framework is not None and framework.kubeflow_framework_name else None


def count(job: Mapping[str, Any], event: str, amount: float = 1) -> None:
    """Count kubetrain's moment `event` of `job` in its operator's family, where that operator
    counted it: created, succeeded, failed, restarted (`amount` restarts), deleted (the
    controller deleted the job: its TTL) or gone (the job was seen deleted)."""
    family = family_of(job)
    name = _UPSTREAM_EVENT.get(event)
    if family is None or amount <= 0:
        return
    meta = job.get("metadata") or {}
    kind = str(job.get("kind"))
    if family == TRAINING_OPERATOR and name is not None:
        framework = get_framework(kind)
        assert framework is not None  # family_of
        namespace = str(meta.get("namespace", ""))
        TRAINING_OPERATOR_COUNTERS[name].labels(namespace, framework.kubeflow_framework_name).inc(amount)
    elif family == MPI_OPERATOR and name in MPI_OPERATOR_COUNTERS:
        MPI_OPERATOR_COUNTERS[name].inc(amount)
    elif family == KUBEDL:  # KubeDL counts a deletion when it sees it, whoever deleted the job
        kubedl_name = {"deleted": None, "gone": "deleted"}.get(event, name)
        if kubedl_name is not None:
            KUBEDL_COUNTERS.inc(kubedl_name, kind.lower(), amount)


class SeriesBound(Generic[K]):
    """At most `limit` keys have series at once: `touch` adds a key (or marks it used), and past
    the limit the key touched least recently loses its series (`remove(key)`); `forget` removes
    one now (a deleted job). Thread-safe; `remove` runs under the lock."""

    def __init__(self, limit: int, remove: Callable[[K], None]) -> None:
        self.limit = limit
        self._remove = remove
        self._keys: OrderedDict[K, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def touch(self, key: K, set_series: Callable[[], None] | None = None) -> None:
        """Keep `key` (the most recently used), then set its series (`set_series`), evicting
        the least recently used keys past the limit."""
        with self._lock:
            self._keys.pop(key, None)
            self._keys[key] = None
            while len(self._keys) > self.limit:
                self._remove(self._keys.popitem(last=False)[0])
            if set_series is not None:
                set_series()

    def forget(self, key: K) -> None:
        """Remove `key`'s series now (nothing when it has none)."""
        with self._lock:
            if self._keys.pop(key, 0) is None:
                self._remove(key)

    def forget_where(self, match: Callable[[K], bool]) -> int:
        """Remove the series of every key `match` accepts; how many keys."""
        with self._lock:
            gone = [key for key in self._keys if match(key)]
            for key in gone:
                del self._keys[key]
                self._remove(key)
        return len(gone)


def _remove_job_info(key: tuple[str, str]) -> None:
    namespace, launcher = key
    with contextlib.suppress(KeyError):
        MPI_JOB_INFO.remove(launcher, namespace)


JOB_INFO: SeriesBound[tuple[str, str]] = SeriesBound(MAX_JOB_INFO, _remove_job_info)


def observe_pod(pod: Mapping[str, Any]) -> None:
    """Set `mpi_operator_job_info` for the MPIJob whose mpi-operator Launcher pod this is."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if (
        labels.get(KUBEFLOW_LABEL_OPERATOR_NAME) != MPI_OPERATOR_NAME
        or labels.get(KUBEFLOW_LABEL_JOB_ROLE) != "launcher"
    ):
        return
    owned = any(
        ref.get("controller")
        and ref.get("kind") == MPI_KIND
        and group_of(ref.get("apiVersion")) == KUBEFLOW_GROUP
        for ref in meta.get("ownerReferences") or ()
    )
    job_name = labels.get(KUBEFLOW_LABEL_JOB_NAME)
    if not owned or not job_name:
        return
    namespace, launcher = str(meta.get("namespace", "")), f"{job_name}{LAUNCHER_SUFFIX}"
    JOB_INFO.touch(
        (namespace, launcher), lambda: MPI_JOB_INFO.labels(launcher=launcher, namespace=namespace).set(1)
    )


def forget_job(kind: str, namespace: str, name: str) -> None:
    """A deleted MPIJob's `mpi_operator_job_info` goes (a training-operator one never had it)."""
    if kind != MPI_KIND:
        return
    key = (namespace, f"{name}{LAUNCHER_SUFFIX}")
    JOB_INFO.forget(key)


def forget_namespace(namespace: str) -> int:
    """Remove the training operator's and the job-info series of a deleted namespace."""
    removed = 0
    for counter in TRAINING_OPERATOR_COUNTERS.values():
        for labels in [key for key in list(counter._metrics) if key[0] == namespace]:
            counter.remove(*labels)
            removed += 1
    removed += JOB_INFO.forget_where(lambda key: key[0] == namespace)
    return removed


on_forget_job(forget_job)
on_forget_namespace(forget_namespace)
