"""The devcluster side of bench_controller_scale.py (not a benchmark itself): a store listener
that notes when pods appear and run and jobs change state (`Tracker`), bounded polling, reconcile
histogram quantiles, and the start-up mode's fill (finished or Running jobs with their pods
stored directly) with the memory of one cached pod.
"""

from __future__ import annotations

import asyncio
import sys
import time
import tracemalloc
from datetime import UTC, datetime
from typing import Any

import orjson
from _common import histogram_quantile, nodes_for
from prometheus_client.parser import text_string_to_metric_families

from kubetrain.dev.stack import DevStackOptions
from kubetrain.devcluster.apiserver.storage.store import Event
from kubetrain.devcluster.apiserver.verbs.core import Target
from kubetrain.devcluster.kubelet.podstatus import running_status
from kubetrain.kube.cache import slim_pod
from kubetrain.kube.resources import ResourceRef, job_resources_in
from kubetrain.operator.plan import Observed, PlannerConfig, plan

JOB_RKEY = "pytorchjobs.kubetrain.io"
GROUPS = ("kubetrain.io", "kubeflow.org")  # --group: the jobs' API group
WRITE_VERBS = ("create", "update", "patch", "delete")


def true_conditions(obj: dict[str, Any]) -> set[str]:
    return {
        c.get("type", "")
        for c in (obj.get("status") or {}).get("conditions") or ()
        if c.get("status") == "True"
    }


class Tracker:
    """A devcluster store listener: when pods appear, run, and jobs change state."""

    def __init__(self, job_rkey: str = JOB_RKEY) -> None:
        self.job_rkey = job_rkey
        self.pods: dict[tuple[str, str], str] = {}  # (namespace, name) -> phase
        self.jobs: dict[str, set[str]] = {}
        self.job_status_writes = 0
        self.status_writes: dict[str, int] = {}
        self.first_status: dict[str, float] = {}
        self.marks: dict[str, float] = {}
        self.want_pods = 0

    def __call__(self, ev: Event) -> None:
        if ev.rkey == "pods":
            meta = ev.obj["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            if ev.type == "DELETED":
                self.pods.pop(key, None)
                return
            self.pods[key] = str((ev.obj.get("status") or {}).get("phase") or "Pending")
            if ev.type == "ADDED" and len(self.pods) == self.want_pods and "all_pods" not in self.marks:
                self.marks["all_pods"] = time.perf_counter()
        elif ev.rkey == self.job_rkey:
            name = ev.obj["metadata"]["name"]
            if ev.type == "DELETED":
                self.jobs.pop(name, None)
                return
            if ev.prev is not None and ev.obj.get("status") != ev.prev.get("status"):
                self.job_status_writes += 1
                self.status_writes[name] = self.status_writes.get(name, 0) + 1
                self.first_status.setdefault(name, time.perf_counter())
            self.jobs[name] = true_conditions(ev.obj)

    def progress(self) -> str:
        phases: dict[str, int] = {}
        for p in self.pods.values():
            phases[p] = phases.get(p, 0) + 1
        conds: dict[str, int] = {}
        for c in self.jobs.values():
            for t in c:
                conds[t] = conds.get(t, 0) + 1
        return f"pods {phases}, jobs {len(self.jobs)} with true conditions {conds}"

    def count_pods(self, phase: str) -> int:
        return sum(1 for p in self.pods.values() if p == phase)

    def count_jobs(self, condition: str) -> int:
        return sum(1 for c in self.jobs.values() if condition in c)


async def wait_until(pred: Any, limit: float, what: str, progress: Any = None) -> None:
    start = time.perf_counter()
    deadline, report = start + limit, start + 10
    while not pred():
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError(f"timed out waiting for {what}" + (f": {progress()}" if progress else ""))
        if progress is not None and now > report:
            print(f"  waiting for {what} ({now - start:.0f} s): {progress()}", file=sys.stderr, flush=True)
            report = now + 10
        await asyncio.sleep(0.05)


PLAN_HISTOGRAM = "kubetrain_reconcile_plan_duration_seconds"
# What a reconcile's duration is made of (kubetrain/operator/reconciletimes.py), by output key.
PART_HISTOGRAMS = {
    "rate_limiter_wait": "kubetrain_reconcile_rate_limiter_wait_seconds",
    "api_wait": "kubetrain_reconcile_api_wait_seconds",
    "own": "kubetrain_reconcile_own_duration_seconds",
}


def quantiles(hist: dict[str, Any]) -> dict[str, Any]:
    p50, p99 = histogram_quantile(hist, 0.5), histogram_quantile(hist, 0.99)
    return {
        "reconciles": int(hist["count"]),
        "mean_ms": round(1000 * hist["sum"] / hist["count"], 2) if hist["count"] else None,
        "p50_ms": round(p50 * 1000, 2) if p50 is not None else None,
        "p99_ms": round(p99 * 1000, 2) if p99 is not None else None,
    }


def stack_options(group: str = GROUPS[0], pods: int = 0) -> DevStackOptions:
    """devcluster and the pod simulator, with nodes for `pods` pods; with `group`'s CRDs
    installed (kubetrain.io's always)."""
    return DevStackOptions(
        webhook=False,
        training_policies=False,
        controller=False,
        simulator=True,
        simulated_nodes=nodes_for(pods, cpus_each=1),  # pytorch_job's request
        watch_window=200_000,
        api_groups=(group,),
    )


def events_dropped(metrics_text: str) -> int:
    """Events the operator dropped (kubetrain_events_dropped_total, every reason): its recorders'
    pending writes were full."""
    return int(
        sum(
            sample.value
            for family in text_string_to_metric_families(metrics_text)
            if family.name == "kubetrain_events_dropped"
            for sample in family.samples
            if sample.name == "kubetrain_events_dropped_total"
        )
    )


def job_ref(group: str) -> ResourceRef:
    """The PyTorchJob resource of `group` (kubetrain.io/v1 or kubeflow.org/v1)."""
    return next(r for r in job_resources_in([group]).values() if r.kind == "PyTorchJob")


def in_group(job: dict[str, Any], ref: ResourceRef) -> dict[str, Any]:
    """The same job as a `ref` object (the spec is the same in both groups)."""
    return {**job, "apiVersion": f"{ref.group}/{ref.version}"}


def finished_status(replicas: int) -> dict[str, Any]:
    t = "2026-01-01T00:00:00Z"

    def cond(type_: str, status: str, reason: str) -> dict[str, Any]:
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": f"PyTorchJob is {type_.lower()}",
            "lastUpdateTime": t,
            "lastTransitionTime": t,
        }

    return {
        "conditions": [
            cond("Created", "True", "PyTorchJobCreated"),
            cond("Running", "False", "PyTorchJobSucceeded"),
            cond("Succeeded", "True", "PyTorchJobSucceeded"),
        ],
        "replicaStatuses": {"Worker": {"succeeded": replicas, "active": 0, "failed": 0}},
        "startTime": t,
        "completionTime": t,
    }


async def running_pods(cluster: Any, pods_rt: Any, job: dict[str, Any]) -> dict[str, Any]:
    """Store the job's pods (as the planner builds them, then bound and Running, through
    devcluster's create path so they get the API server's defaults) and return the status the
    planner gives the job with them (so the operator has nothing to write at start-up)."""
    now = datetime.now(UTC)
    first = plan(job, Observed(pods=[], service=None, pod_group=None), now, PlannerConfig())
    running = []
    for i, pod in enumerate(first.create_pods):
        created = (await cluster.api.create(Target(pods_rt, "v1", "default", ""), pod)).obj
        created["spec"]["nodeName"] = f"kubetrain-sim-node-{i % 3}"
        created["status"] = running_status(created, host_ip="192.168.77.10", pod_ip=f"10.0.{i}.1", now=now)
        cluster.store.update(pods_rt.key, created, None)
        running.append(created)
    second = plan(job, Observed(pods=running, service=None, pod_group=None), now, PlannerConfig())
    return dict(second.status or job.get("status") or {})


def cached_pod_bytes(cluster: Any, samples: int = 2000) -> dict[str, int]:
    """Memory of one pod as the operator caches it (tracemalloc of `samples` pods decoded from
    the JSON the API server sends, as the informer does), with and without `slim_pod`."""
    pod = next(iter(cluster.store.items("pods", "default")))
    raw = orjson.dumps(pod)
    out = {"json_bytes": len(raw)}
    for label, transform in (("full", None), ("slim", slim_pod)):
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        kept = [orjson.loads(raw) for _ in range(samples)]
        if transform is not None:
            kept = [transform(p) for p in kept]
        out[f"{label}_bytes"] = (tracemalloc.get_traced_memory()[0] - base) // samples
        tracemalloc.stop()
        del kept
    return out
