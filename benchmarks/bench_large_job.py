"""One large job: time until all its pods exist, against a bare client creating the same pods.

    .venv/bin/python benchmarks/bench_large_job.py --sizes 250,500,1000 [--qps 150 --burst 300]

For each size, on a fresh devcluster (no pod simulator: only pod creation is measured):
1. a bare client (its own process, no client-side rate limit, `--concurrency` 16 requests in
   flight) creates the same pods the planner builds for the job (without ownerReferences and
   labels, in namespace `bare`); its time is from the first request to the last response;
2. `kubetrain controller` (its own process, default --qps/--burst unless given) is started and
   once ready one PyTorchJob with that many workers is created; its time is from the create
   request to the last pod appearing in devcluster's store.
The client-side rate limiter's bound is the time the token bucket needs to admit the job's
writes (N pods + 1 Service + 1 status): max(0, (writes - burst) / qps).
Target (DESIGN.md): the operator within 1.5x the bare client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import Operator, bench_client, load_average, pytorch_job, write_result

from kubetrain.devstack import DevStack, DevStackOptions
from kubetrain.kube.resources import NAMESPACES, PODS, job_resource
from kubetrain.operator.plan import Observed, PlannerConfig, plan

SCRIPT = str(Path(__file__).resolve())


def planned_pods(replicas: int, namespace: str) -> list[dict[str, Any]]:
    job = pytorch_job("large", replicas, namespace=namespace)
    job["metadata"].update(
        uid="00000000-0000-0000-0000-000000000000", creationTimestamp="2026-01-01T00:00:00Z"
    )
    every_pod = PlannerConfig(max_pod_creates=replicas + 1)  # the bare client creates them all at once
    p = plan(job, Observed(pods=[], service=None, pod_group=None), datetime.now(UTC), every_pod)
    for pod in p.create_pods:
        pod["metadata"].pop("ownerReferences", None)
        pod["metadata"].pop("labels", None)
    return p.create_pods


async def bare_client(kubeconfig: str, replicas: int, concurrency: int) -> float:
    client = await bench_client(kubeconfig)
    pods = planned_pods(replicas, "bare")
    sem = asyncio.Semaphore(concurrency)

    async def create(pod: dict[str, Any]) -> None:
        async with sem:
            await client.create(PODS, pod, namespace="bare")

    try:
        t0 = time.perf_counter()
        await asyncio.gather(*(create(p) for p in pods))
        return time.perf_counter() - t0
    finally:
        await client.close()


async def one_size(replicas: int, args: argparse.Namespace) -> dict[str, Any]:
    opts = DevStackOptions(webhook=False, training_policies=False, controller=False, simulator=False)
    async with DevStack(opts) as stack:
        cluster = stack.cluster
        client = await bench_client(cluster.kubeconfig_path)
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bare"}}
        )
        cmd = [
            sys.executable,
            SCRIPT,
            "--bare-client",
            cluster.kubeconfig_path,
            "--sizes",
            str(replicas),
            "--concurrency",
            str(args.concurrency),
        ]
        # The bare client runs in its own process while this one serves it (devcluster).
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        bare_s = float(out.decode().strip().splitlines()[-1])
        assert cluster.store.count("pods", "bare") == replicas

        extra = []
        if args.qps is not None:
            extra += ["--qps", str(args.qps)]
        if args.burst is not None:
            extra += ["--burst", str(args.burst)]
        op = Operator(cluster.kubeconfig_path, extra=extra)
        op.start()
        try:
            await op.wait_ready()
            done = asyncio.Event()
            last: list[float] = []

            def listen(ev: Any) -> None:
                if (
                    ev.rkey == "pods"
                    and ev.type == "ADDED"
                    and ev.obj["metadata"].get("namespace") == "default"
                ):
                    last.append(time.perf_counter())
                    if len(last) == replicas:
                        done.set()

            cluster.store.listeners.append(listen)
            t0 = time.perf_counter()
            await client.create(
                job_resource("PyTorchJob"), pytorch_job("large", replicas), namespace="default"
            )
            await asyncio.wait_for(done.wait(), args.timeout)
            operator_s = last[-1] - t0
            first_pod_s = last[0] - t0
            writes = cluster.requests.count(verb="create", resource="pods", user_agent="kubetrain/")
        finally:
            op.stop()
            await client.close()
    qps = args.qps if args.qps is not None else 150.0
    burst = args.burst if args.burst is not None else 300
    job_writes = replicas + 2  # pods, the Service, the first status write
    bound = max(0.0, (job_writes - burst) / qps) if qps > 0 else 0.0
    return {
        "replicas": replicas,
        "bare_client_s": round(bare_s, 2),
        "bare_client_concurrency": args.concurrency,
        "operator_s": round(operator_s, 2),
        "operator_first_pod_s": round(first_pod_s, 3),
        "ratio": round(operator_s / bare_s, 2),
        "rate_limit_bound_s": round(bound, 2),
        "qps": qps,
        "burst": burst,
        "operator_pod_creates": writes,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    for n in sizes:
        r = await one_size(n, args)
        results.append(r)
        print(
            f"large job {n} replicas: operator {r['operator_s']} s vs bare client {r['bare_client_s']} s "
            f"(ratio {r['ratio']}, target <= 1.5; rate-limit bound {r['rate_limit_bound_s']} s at "
            f"qps {r['qps']} burst {r['burst']})"
        )
    return {"benchmark": "large_job", "load_average_1m": load_average(), "sizes": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="250,500,1000")
    parser.add_argument("--concurrency", type=int, default=16, help="bare client requests in flight")
    parser.add_argument("--qps", type=float, default=None, help="operator --qps (default: its own)")
    parser.add_argument("--burst", type=int, default=None, help="operator --burst (default: its own)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--bare-client", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_client:
        print(asyncio.run(bare_client(args.bare_client, int(args.sizes), args.concurrency)))
        return 0
    res = asyncio.run(run(args))
    path = write_result("large_job", res)
    print(json.dumps(res))
    print(f"written {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
