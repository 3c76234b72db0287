"""Controller at scale against devcluster: many jobs submitted at once, and start-up with many jobs.

    .venv/bin/python benchmarks/bench_controller_scale.py --jobs 1000 --replicas 4
    .venv/bin/python benchmarks/bench_controller_scale.py --jobs 1000 --replicas 4 --group kubeflow.org
    .venv/bin/python benchmarks/bench_controller_scale.py --startup-jobs 10000

Scale mode: devcluster and the pod simulator run in this process; the operator runs as its own
process (`kubetrain controller --no-leader-elect`, default workers/QPS/burst) so its RSS and CPU
are its own. After /readyz, `--jobs` PyTorchJobs of `--replicas` workers (already defaulted, as
the mutating webhook would store them) are created at once by a separate client (32 concurrent
requests, its own User-Agent). `--group kubeflow.org` makes them kubeflow.org/v1 PyTorchJobs
(the operator started with `--api-groups kubeflow.org`, devcluster with that group's CRDs):
those get training-operator's per-pod Events (SuccessfulCreatePod, …), a kubetrain.io job
none. Measured: time until every pod exists, until every pod and job is
Running; reconcile duration p50/p99 (the operator's kubetrain_reconcile_duration_seconds,
interpolated within buckets) and of its parts (rate-limiter wait, API wait, own time:
kubetrain_reconcile_{rate_limiter_wait,api_wait,own_duration}_seconds); peak RSS (VmHWM); the
operator's API requests by verb and resource (devcluster's request log, User-Agent
kubetrain/...); idle CPU over `--idle-seconds` once everything is Running (utime+stime from
/proc); then every pod is finished and the whole life's writes per job are counted once every
job is Succeeded.

Start-up mode: `--startup-jobs` finished PyTorchJobs (with status) plus one new job are put in
devcluster directly (no HTTP, no webhooks) before the operator starts. Measured: seconds from
process start to /readyz (caches synced), to the first reconcile, to the new job's first status
write, and until every job was reconciled once; requests made and RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import (
    Operator,
    add_operator_source,
    bench_client,
    histogram_diff,
    load_average,
    publish,
    pytorch_job,
    requests_by_verb,
    stored_type,
)
from _controller_scale import (
    GROUPS,
    PART_HISTOGRAMS,
    PLAN_HISTOGRAM,
    WRITE_VERBS,
    Tracker,
    cached_pod_bytes,
    events_dropped,
    finished_status,
    in_group,
    job_ref,
    quantiles,
    running_pods,
    stack_options,
    wait_until,
)
from _gcpauses import OwnPauses, describe, frozen_objects, operator_gc_pauses

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.apiserver.verbs.core import Target


async def scale(args: argparse.Namespace, own_gc: OwnPauses) -> dict[str, Any]:
    jobs, replicas = args.jobs, args.replicas
    ref = job_ref(args.group)
    tracker = Tracker(f"{ref.plural}.{ref.group}")
    tracker.want_pods = jobs * replicas
    async with DevStack(stack_options(args.group, pods=jobs * replicas)) as stack:
        stack.cluster.store.listeners.append(tracker)
        client = await bench_client(stack.cluster.kubeconfig_path)
        op = Operator(
            stack.cluster.kubeconfig_path,
            extra=["--api-groups", args.group, *args.operator_args.split()],
            source=args.operator_source,
        )
        log = stack.cluster.requests
        try:
            log.reset()
            own_gc.start()
            op.start()
            ready_s = await op.wait_ready()
            cpu_ready = op.cpu_seconds()
            startup_requests = requests_by_verb(log)
            log.reset()
            before = await op.metrics()
            plan_before = await op.metrics(PLAN_HISTOGRAM)
            parts_before = {k: await op.metrics(name) for k, name in PART_HISTOGRAMS.items()}
            profiler = None
            if args.profile:
                # py-spy (PyPI) samples the operator process from outside: --format raw gives
                # collapsed stacks (flamegraph.pl / speedscope input), --nonblocking keeps it cheap.
                exe = str(Path(sys.executable).parent / "py-spy")
                profiler = await asyncio.create_subprocess_exec(
                    *[
                        exe,
                        "record",
                        "--pid",
                        str(op.pid),
                        "--format",
                        "raw",
                        "--rate",
                        "200",
                        "--nonblocking",
                        "-o",
                        args.profile,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                await asyncio.sleep(1)
            bodies = [in_group(pytorch_job(f"bench-{i:05d}", replicas), ref) for i in range(jobs)]
            sem = asyncio.Semaphore(32)

            async def submit(body: dict[str, Any]) -> None:
                async with sem:
                    await client.create(ref, body, namespace="default")

            t0 = time.perf_counter()
            await asyncio.gather(*(submit(b) for b in bodies))
            submitted_s = time.perf_counter() - t0
            await wait_until(
                lambda: "all_pods" in tracker.marks, args.timeout, "every pod to exist", tracker.progress
            )
            all_pods_s = tracker.marks["all_pods"] - t0
            await wait_until(
                lambda: (
                    tracker.count_pods("Running") == jobs * replicas and tracker.count_jobs("Running") == jobs
                ),
                args.timeout,
                "every pod and job to be Running",
                tracker.progress,
            )
            all_running_s = time.perf_counter() - t0
            await asyncio.sleep(2)  # let the last status writes and events settle
            if profiler is not None:
                profiler.send_signal(signal.SIGINT)
                await asyncio.wait_for(profiler.wait(), 30)
            hist_running = histogram_diff(await op.metrics(), before)
            plan_running = histogram_diff(await op.metrics(PLAN_HISTOGRAM), plan_before)
            parts_running = {
                k: histogram_diff(await op.metrics(name), parts_before[k])
                for k, name in PART_HISTOGRAMS.items()
            }
            rss_running = op.rss_peak_mb()
            cpu_to_running = op.cpu_seconds() - cpu_ready
            requests_to_running = requests_by_verb(log)

            cpu0, w0 = op.cpu_seconds(), time.perf_counter()
            total0 = log.total
            await asyncio.sleep(args.idle_seconds)
            idle_cpu = (op.cpu_seconds() - cpu0) / (time.perf_counter() - w0)
            idle_requests: dict[str, int] = {}
            # The log keeps the newest requests in a bounded deque: the window's are its last ones.
            idle_total = log.total - total0
            if idle_total > len(log.records):
                raise RuntimeError(f"the request log dropped some of the idle window's {idle_total} requests")
            for r in itertools.islice(log.records, len(log.records) - idle_total, None):
                if r.user_agent.startswith("kubetrain/"):
                    k = f"{r.verb} {r.resource}"
                    idle_requests[k] = idle_requests.get(k, 0) + 1

            finished_s = None
            if not args.no_finish:
                t1 = time.perf_counter()
                names = list(tracker.pods)

                async def finish(ns: str, name: str) -> None:
                    async with sem:
                        assert stack.simulator is not None
                        await stack.simulator.finish(ns, name, wait_seconds=60)

                await asyncio.gather(*(finish(ns, n) for ns, n in names))
                await wait_until(
                    lambda: tracker.count_jobs("Succeeded") == jobs,
                    args.timeout,
                    "every job to succeed",
                    tracker.progress,
                )
                await asyncio.sleep(2)
                finished_s = time.perf_counter() - t1
            hist_all = histogram_diff(await op.metrics(), before)
            life_requests = requests_by_verb(log)
            rss_peak = op.rss_peak_mb()
            _, metrics_text = await op.get("/metrics")
            own_gc.stop()
        finally:
            op.stop()
            await client.close()

    writes = {k: v for k, v in life_requests.items() if k.split()[0] in WRITE_VERBS}
    job_writes = {k: v for k, v in writes.items() if not k.endswith(" events")}
    reads_after_sync = {k: v for k, v in life_requests.items() if k.split()[0] in ("get", "list")}
    return {
        "benchmark": "controller_scale",
        "group": args.group,
        "jobs": jobs,
        "replicas": replicas,
        "pods": jobs * replicas,
        "load_average_1m": load_average(),
        "operator_ready_s": round(ready_s, 2),
        "submit_s": round(submitted_s, 2),
        "all_pods_exist_s": round(all_pods_s, 2),
        "all_running_s": round(all_running_s, 2),
        "all_succeeded_after_finish_s": round(finished_s, 2) if finished_s is not None else None,
        "reconcile_until_running": quantiles(hist_running),
        "reconcile_whole_life": quantiles(hist_all),
        # The decision alone (cache reads + planner), without the API writes and their rate limit.
        "plan_until_running": quantiles(plan_running),
        # The reconcile's parts: its requests waiting for the client rate limiter, in flight (the
        # API server), and the rest (decision, own work between requests, event-loop turns).
        "parts_until_running": {k: quantiles(h) for k, h in parts_running.items()},
        "operator_args": args.operator_args,
        "operator_cpu_s_until_running": round(cpu_to_running, 2),
        "operator_cpu_ms_per_job_until_running": round(1000 * cpu_to_running / jobs, 2),
        "rss_peak_mb_until_running": round(rss_running, 1),
        "rss_peak_mb": round(rss_peak, 1),
        "idle_seconds": args.idle_seconds,
        "idle_cpu_percent_of_one_core": round(100 * idle_cpu, 3),
        "idle_requests": idle_requests,
        "startup_requests": startup_requests,
        "requests_until_running": requests_to_running,
        "requests_whole_life": life_requests,
        "writes_per_job_excluding_events": round(sum(job_writes.values()) / jobs, 2),
        "events_writes_per_job": round(sum(v for k, v in writes.items() if k.endswith(" events")) / jobs, 2),
        "events_dropped": events_dropped(metrics_text),
        "write_budget_per_job": replicas + 1 + 4,  # N pods + Service + 4 status writes (no gang)
        "reads_after_sync": reads_after_sync,
        "job_status_writes_seen": tracker.job_status_writes,
        # Garbage-collection pauses over the whole run (the operator's life; this process's from
        # the operator's start): devcluster + simulator + load generator are this process.
        "operator_gc_pauses": operator_gc_pauses(metrics_text),
        "operator_gc_frozen_objects": frozen_objects(metrics_text),
        "benchmark_process_gc": own_gc.summary(),
    }


async def startup(args: argparse.Namespace) -> dict[str, Any]:
    n = args.startup_jobs
    tracker = Tracker()
    tracker.want_pods = args.replicas
    async with DevStack(stack_options()) as stack:  # the fresh job is timed to its first status
        cluster = stack.cluster
        rt = stored_type(cluster, "kubetrain.io", "pytorchjobs")
        t_fill = time.perf_counter()
        pods_rt = stored_type(cluster, "", "pods")
        for i in range(n):
            body = pytorch_job(f"old-{i:05d}", args.replicas)
            res = await cluster.api.create(Target(rt, "v1", "default", ""), body)
            stored = res.obj
            if args.startup_running:
                status = await running_pods(cluster, pods_rt, stored)
            else:
                status = finished_status(args.replicas)
            status["observedGeneration"] = stored["metadata"]["generation"]
            cluster.store.update(rt.key, {**stored, "status": status}, None)
        fill_s = time.perf_counter() - t_fill
        pod_bytes = cached_pod_bytes(cluster) if args.startup_running else None
        await cluster.api.create(Target(rt, "v1", "default", ""), pytorch_job("fresh", args.replicas))
        cluster.store.listeners.append(tracker)
        op = Operator(cluster.kubeconfig_path, extra=args.operator_args.split(), source=args.operator_source)
        log = cluster.requests
        try:
            log.reset()
            op.start()
            ready_s = await op.wait_ready(limit=args.timeout)
            first_reconcile_s = None
            all_reconciled_s = None
            deadline = time.perf_counter() + args.timeout
            while time.perf_counter() < deadline:
                m = await op.metrics()
                now = time.perf_counter() - op.started_at
                if first_reconcile_s is None and m["count"] >= 1:
                    first_reconcile_s = now
                if m["count"] >= n + 1:
                    all_reconciled_s = now
                    break
                await asyncio.sleep(0.1)
            await wait_until(lambda: "fresh" in tracker.first_status, 30, "the new job's status")
            fresh_status_s = tracker.first_status["fresh"] - op.started_at
            await asyncio.sleep(1)
            hist = await op.metrics()
            requests = requests_by_verb(log)
            rss_peak = op.rss_peak_mb()
        finally:
            op.stop()
    return {
        "benchmark": "controller_startup",
        "existing_jobs": n,
        "replicas": args.replicas,
        "load_average_1m": load_average(),
        "fill_s": round(fill_s, 1),
        "ready_s": round(ready_s, 2),
        "first_reconcile_s": round(first_reconcile_s, 2) if first_reconcile_s is not None else None,
        "new_job_first_status_write_s": round(fresh_status_s, 2),
        "all_jobs_reconciled_s": round(all_reconciled_s, 2) if all_reconciled_s is not None else None,
        "reconcile": quantiles(hist),
        "requests": requests,
        "status_writes_to_existing_jobs": sum(
            n for name, n in tracker.status_writes.items() if name != "fresh"
        ),
        "rss_peak_mb": round(rss_peak, 1),
        "running_pods": n * args.replicas if args.startup_running else 0,
        "cached_pod_bytes": pod_bytes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument(
        "--group",
        choices=GROUPS,
        default=GROUPS[0],
        help="the API group of the PyTorchJobs (kubeflow.org: training-operator's, with its per-pod Events)",
    )
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--no-finish", action="store_true", help="skip finishing pods")
    parser.add_argument("--startup-jobs", type=int, default=0, help="start-up mode: N existing jobs")
    parser.add_argument(
        "--startup-running",
        action="store_true",
        help="start-up mode: the existing jobs are Running with --replicas Running pods each",
    )
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument(
        "--profile", metavar="FILE", help="py-spy the operator until all Running (raw stacks)"
    )
    parser.add_argument(
        "--operator-args", default="", help="extra `kubetrain controller` flags, e.g. '--qps 0 --workers 8'"
    )
    add_operator_source(parser)
    args = parser.parse_args()
    if args.startup_jobs:
        res = asyncio.run(startup(args))
        print(
            f"controller start-up with {res['existing_jobs']} existing jobs: ready (caches synced) in "
            f"{res['ready_s']} s, first reconcile {res['first_reconcile_s']} s, new job's status "
            f"{res['new_job_first_status_write_s']} s, all reconciled {res['all_jobs_reconciled_s']} s, "
            f"peak RSS {res['rss_peak_mb']} MB; cached pod {res['cached_pod_bytes']}"
        )
    else:
        res = asyncio.run(scale(args, OwnPauses()))
        r = res["reconcile_until_running"]
        print(
            f"controller {res['jobs']} {res['group']} jobs x {res['replicas']} replicas: all pods exist in "
            f"{res['all_pods_exist_s']} s, all Running {res['all_running_s']} s; reconcile p50 "
            f"{r['p50_ms']} ms p99 {r['p99_ms']} ms (decision alone p99 "
            f"{res['plan_until_running']['p99_ms']} ms; p99 of its parts: "
            + ", ".join(f"{k} {v['p99_ms']} ms" for k, v in res["parts_until_running"].items())
            + f"); peak RSS {res['rss_peak_mb']} MB; idle CPU "
            f"{res['idle_cpu_percent_of_one_core']}%; writes/job {res['writes_per_job_excluding_events']} "
            f"(+{res['events_writes_per_job']} events, {res['events_dropped']} dropped; budget "
            f"{res['write_budget_per_job']}); operator CPU until Running "
            f"{res['operator_cpu_s_until_running']} s"
        )
        own = res["benchmark_process_gc"]
        operator_pauses = describe(res["operator_gc_pauses"], "max_ms_le")
        print(
            f"GC pauses (KUBETRAIN_GC_FREEZE factor {own['freeze_policy']}): operator {operator_pauses}, "
            f"frozen {res['operator_gc_frozen_objects']}; benchmark process (devcluster + simulator) "
            f"{describe(own['pauses'])}, frozen {own['frozen_objects']}, thaws {own['thaws']}, "
            f"RSS {own['rss_mb']} MB (peak {own['rss_peak_mb']})"
        )
    publish(res["benchmark"], res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
