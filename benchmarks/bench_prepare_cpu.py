"""CPU of a job's first `prepare_job` in-process: parse, default, type, validate and lay out.

    .venv/bin/python benchmarks/bench_prepare_cpu.py [--prepares 100] [--rounds 3]
        [--jobs small,large,xlarge]

What the planner pays the first time it sees a job (operator/prepare.py; later reconciles of the
same spec generation hit `JobCache`), for each job size of bench_webhook.py: the job stored as
the mutating webhook left it, decoded from its JSON as the informer decodes it, each copy with
its own uid so the cache never hits (the per-template validation cache does, as in a burst of
jobs from one template). Each figure is the least of `--rounds` rounds of
`time.process_time()` over `--prepares` first prepares: the round least disturbed by other work
on a shared machine. A 1,000-job burst's decision p99 is this first sight of each job.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import orjson
from _common import load_average, publish
from _webhook_jobs import JOBS, parse_jobs

from kubetrain.jobs.defaulting import default_job
from kubetrain.operator.prepare import JobCache


def stored_jobs(job: dict[str, Any], count: int, start: int) -> list[dict[str, Any]]:
    """`count` copies of `job` as the API server stores them after the mutating webhook, each
    decoded from JSON (no shared objects, as the informer gets them) with its own uid."""
    stored = default_job(job).obj
    out = []
    for i in range(start, start + count):
        copy = orjson.loads(orjson.dumps(stored))
        copy["metadata"] = {**copy["metadata"], "uid": f"uid-{i}", "generation": 1}
        out.append(copy)
    return out


def cpu_ms_per_prepare(job: dict[str, Any], prepares: int, rounds: int) -> float:
    cache = JobCache()
    cache.get(stored_jobs(job, 1, -1)[0])  # schema and template cache warm, as in a running operator
    best = float("inf")
    for r in range(rounds):
        jobs = stored_jobs(job, prepares, r * prepares)
        started = time.process_time()
        for obj in jobs:
            prepared = cache.get(obj)
            assert prepared.valid, prepared.errors
        best = min(best, (time.process_time() - started) / prepares)
    return round(best * 1000, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--prepares", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--jobs", type=parse_jobs, default=list(JOBS), help="comma-separated: small,large,xlarge"
    )
    args = parser.parse_args()
    results: dict[str, Any] = {"benchmark": "prepare-cpu", "load_average_before": load_average()}
    for name in args.jobs:
        ms = cpu_ms_per_prepare(JOBS[name](), args.prepares, args.rounds)
        results[name] = {"cpu_ms_per_first_prepare": ms}
        print(f"first prepare_job of the {name} job: {ms} ms of CPU")
    results["load_average_after"] = load_average()
    publish("prepare-cpu", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
