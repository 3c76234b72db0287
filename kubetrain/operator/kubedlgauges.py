"""KubeDL's `kubedl_jobs_running{kind}` and `kubedl_jobs_pending{kind}`, computed at each scrape
from the controller's cache, as KubeDL computed them from its own (`NewJobMetrics`' GaugeFuncs
over `JobStatusCounter`, pkg/metrics):

- running: the jobs of the kind with a `Running` condition of status True (`util.IsRunning`);
- pending: the jobs whose only condition is `Created`, True (`util.IsCreated` and one condition).

`kind` is the kind in lower case. A controller serving training.kubedl.io registers its cache
(`serve`) when it starts and removes it when it stops; every kind it serves then has both
series (0 without jobs) and its `kubedl_jobs_{created,…}` counters start at 0, as KubeDL's did
from its start. Several controllers in one process add up. KubeDL's MPIJob had no list type
there, so upstream always exported 0 for `mpijob`; kubetrain counts MPIJobs like the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubetrain.api.groups import KUBEDL_GROUP
from kubetrain.kube.cache import Cache
from kubetrain.kube.resources import ResourceRef
from kubetrain.operator.upstreammetrics import KUBEDL_COUNTERS, KUBEDL_EVENTS
from kubetrain.serving.metrics import REGISTRY

Obj = Mapping[str, Any]
# A controller's KubeDL jobs by kind (from its cache; no API call).
JobLister = Callable[[], Mapping[str, Iterable[Obj]]]


def _true_types(job: Obj) -> tuple[list[str], int]:
    conditions = (job.get("status") or {}).get("conditions") or []
    return [str(c.get("type")) for c in conditions if c.get("status") == "True"], len(conditions)


def running(job: Obj) -> bool:
    return "Running" in _true_types(job)[0]


def pending(job: Obj) -> bool:
    true, count = _true_types(job)
    return count == 1 and true == ["Created"]


class KubeDLJobGauges(Collector):
    """The two gauges over every registered controller's KubeDL jobs."""

    def __init__(self) -> None:
        self._listers: dict[int, JobLister] = {}
        self._lock = threading.Lock()
        self._next = 0

    def serve(self, kinds: Iterable[str], lister: JobLister) -> int:
        """Add a controller's jobs; returns the handle `stop` takes."""
        for kind in kinds:
            for event in KUBEDL_EVENTS:
                KUBEDL_COUNTERS.inc(event, kind.lower(), 0)
        with self._lock:
            self._next += 1
            self._listers[self._next] = lister
            return self._next

    def stop(self, handle: int) -> None:
        with self._lock:
            self._listers.pop(handle, None)

    def describe(self) -> Iterator[Metric]:
        yield from _families()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            listers = list(self._listers.values())
        counts: dict[str, list[int]] = {}
        for lister in listers:
            for kind, jobs in lister().items():
                tally = counts.setdefault(kind.lower(), [0, 0])
                for job in jobs:
                    tally[0] += running(job)
                    tally[1] += pending(job)
        run, wait = _families()
        for kind, (n_running, n_pending) in sorted(counts.items()):
            run.add_metric([kind], n_running)
            wait.add_metric([kind], n_pending)
        yield run
        yield wait


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    return (
        GaugeMetricFamily("kubedl_jobs_running", "Counts number of jobs running currently", labels=["kind"]),
        GaugeMetricFamily("kubedl_jobs_pending", "Counts number of jobs pending currently", labels=["kind"]),
    )


KUBEDL_GAUGES = KubeDLJobGauges()
REGISTRY.register(KUBEDL_GAUGES)


def serve_cache(cache: Cache, refs: Iterable[ResourceRef]) -> int | None:
    """Export the gauges over the training.kubedl.io jobs among `refs` in `cache` (None: none)."""
    kubedl = [ref for ref in refs if ref.group == KUBEDL_GROUP]
    if not kubedl:
        return None
    return KUBEDL_GAUGES.serve(
        [ref.kind for ref in kubedl], lambda: {ref.kind: cache.list(ref) for ref in kubedl}
    )


def stop(handle: int | None) -> None:
    if handle is not None:
        KUBEDL_GAUGES.stop(handle)
