"""What KubeDL's launch-delay histograms add to a reconcile of a large training.kubedl.io job.

    .venv/bin/python benchmarks/bench_kubedl_launch.py --replicas 1000,10000

For each size, one PyTorchJob (N Workers + 1 Master) whose status is Running and whose pods all
exist, built once (not measured). Timed with `time.perf_counter`, median of `--repeat` calls:
1. "waiting": every pod Running and Ready but one still Pending — neither delay is complete for
   the all-pods rule, so each reconcile reads every pod again (the state a large job can stay in
   while its last pods wait for nodes); the first-pod delay is observed at the first call;
2. "observed": both delays observed — what every later reconcile of the job pays;
3. "plan": `plan()` of the same job with the same pods, in kubeflow.org (the rest of that
   reconcile's decision, for scale; the defaulted job cached as in the controller).
Prints one JSON line per size. No API server is involved.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from _common import pytorch_job

from kubetrain.operator import kubedllaunch
from kubetrain.operator.plan import Observed, PlannerConfig, plan
from kubetrain.operator.prepare import JobCache

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUNNING = {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]}
NO_LIMIT = 10**9


def stamp(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready_pod(pod: dict[str, Any], i: int) -> dict[str, Any]:
    out = copy.copy(pod)
    out["metadata"] = {**pod["metadata"], "uid": f"uid-{i}"}
    out["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp(5 + i % 60)}],
        "containerStatuses": [{"name": "pytorch", "restartCount": 0}],
    }
    return out


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def one_size(replicas: int, repeat: int) -> dict[str, Any]:
    job = pytorch_job(f"launch-{replicas}", replicas)
    job["metadata"].update(
        uid=f"00000000-0000-0000-0000-{replicas:012d}", generation=1, creationTimestamp=stamp(0)
    )
    every = plan(
        job, Observed(pods=[]), T0, PlannerConfig(max_pod_creates=replicas + 1, max_replicas=NO_LIMIT)
    )
    pods = [ready_pod(p, i) for i, p in enumerate(every.create_pods)]
    del every
    cache = JobCache()
    cache.get(job, gang_scheduling=False, max_replicas=NO_LIMIT)
    config = PlannerConfig(max_replicas=NO_LIMIT)
    plan_seconds = median_seconds(lambda: plan(job, Observed(pods=pods), T0, config, cache=cache), repeat)

    kubedl = {**job, "apiVersion": "training.kubedl.io/v1alpha1"}
    waiting = [*pods[:-1], {**pods[-1], "status": {"phase": "Pending"}}]
    waiting_seconds = median_seconds(lambda: kubedllaunch.observe(kubedl, RUNNING, waiting), repeat)
    kubedllaunch.observe(kubedl, RUNNING, pods)  # the last pod Ready: the all-pods delay observed
    observed_seconds = median_seconds(lambda: kubedllaunch.observe(kubedl, RUNNING, pods), repeat)
    meta = kubedl["metadata"]
    labels = {"kind": "PyTorchJob", "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]}
    count = kubedllaunch.REGISTRY.get_sample_value("kubedl_jobs_all_pods_launch_delay_seconds_count", labels)
    assert count == 1, "the all-pods delay was not observed once"
    return {
        "pods": len(pods),
        "waiting_ms": round(waiting_seconds * 1e3, 3),
        "observed_us": round(observed_seconds * 1e6, 1),
        "plan_ms": round(plan_seconds * 1e3, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicas", default="1000,10000", help="Workers per job, comma-separated")
    parser.add_argument("--repeat", type=int, default=21, help="calls per measurement (the median is kept)")
    args = parser.parse_args()
    for replicas in (int(r) for r in args.replicas.split(",")):
        print(json.dumps(one_size(replicas, args.repeat)), flush=True)


if __name__ == "__main__":
    main()
