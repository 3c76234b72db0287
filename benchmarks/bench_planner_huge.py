"""The planner's cost for one huge job: time and peak memory of `plan()` in-process.

    .venv/bin/python benchmarks/bench_planner_huge.py --replicas 100000

Two reconciles of one PyTorchJob with `--replicas` Workers (+ 1 Master), each timed with
`time.perf_counter` and measured with `tracemalloc` (peak of Python allocations during the call):
1. "first": no pod exists yet (what the first reconcile after `kubectl apply` plans);
2. "half": the first half of the pods exist and run (a reconcile in the middle of creating them).
Prints one JSON line per reconcile with the pods the plan creates. No API server is involved.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
import tracemalloc
from datetime import UTC, datetime
from typing import Any

from _common import pytorch_job

from kubetrain.operator.plan import Observed, PlannerConfig, plan
from kubetrain.operator.prepare import JobCache


def running(pod: dict[str, Any], uid: str) -> dict[str, Any]:
    out = copy.copy(pod)
    out["metadata"] = {**pod["metadata"], "uid": uid}
    out["status"] = {"phase": "Running", "containerStatuses": [{"name": "pytorch", "restartCount": 0}]}
    return out


# The job is far over the operator-wide default maximum replicas per job: measure an operator
# configured for it (--max-replicas-per-job).
NO_LIMIT = 10**9


def measure(label: str, job: dict[str, Any], observed: Observed, cache: JobCache) -> Any:
    tracemalloc.start()
    t0 = time.perf_counter()
    p = plan(job, observed, datetime.now(UTC), PlannerConfig(max_replicas=NO_LIMIT), cache=cache)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "reconcile": label,
                "replicas": job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] + 1,
                "observed_pods": len(observed.pods),
                "planned_creates": len(p.create_pods),
                "seconds": round(seconds, 3),
                "peak_mib": round(peak / 2**20, 1),
            }
        ),
        flush=True,
    )
    return p


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicas", type=int, default=100_000, help="Workers of the job (default 100000)")
    args = parser.parse_args()
    job = pytorch_job("huge", args.replicas)
    job["metadata"].update(uid="00000000-0000-0000-0000-000000000001", generation=1)
    cache = JobCache()
    # Defaulting and validation are cached per generation: not measured.
    cache.get(job, gang_scheduling=False, max_replicas=NO_LIMIT)
    measure("first", job, Observed(pods=[]), cache)
    # Half of the pods exist: built once (not measured), as the informer would hold them.
    every_pod = PlannerConfig(max_pod_creates=args.replicas + 1, max_replicas=NO_LIMIT)
    every = plan(job, Observed(pods=[]), datetime.now(UTC), every_pod)
    half = [running(p, f"uid-{i}") for i, p in enumerate(every.create_pods[: (args.replicas + 1) // 2])]
    del every
    measure("half", job, Observed(pods=half), cache)


if __name__ == "__main__":
    main()
