"""Memory under churn with the garbage-collector freeze policy: jobs created and deleted in waves.

    .venv/bin/python benchmarks/bench_gc_churn.py --jobs 300 --replicas 4 --minutes 3
    KUBETRAIN_GC_FREEZE=off .venv/bin/python benchmarks/bench_gc_churn.py ...   # the policy off

The setting of bench_controller_scale.py (devcluster and the pod simulator in this process, the
operator as its own process). Each wave creates `--jobs` PyTorchJobs of `--replicas` workers,
waits until every pod is Running, deletes every job (its pods go by devcluster's garbage
collector) and waits until no pod and no job is left; waves repeat for `--minutes`. After each
wave, with nothing alive but the empty caches, the operator's and this process's RSS and frozen
objects (`kubetrain_gc_frozen_objects`, gc.get_freeze_count) are recorded: frozen reference
cycles that died (the policy's leak) would show as frozen objects and RSS growing from wave to
wave. At the end this process unfreezes and collects once: what that collection frees is the
garbage that was frozen (plus what the last young collections left).

This process is devcluster's, so its RSS per wave is devcluster's growth under churn. From
`--from-wave` on, each wave also records what devcluster keeps (`_retained.py`: stored objects
by resource, the watch history, the request log, the pod simulator's per-pod state, live
objects) and the end shows what grew; `--tracemalloc` names the allocation sites.
`--watch-window` (default 10,000, kubetrain dev's) is the history devcluster keeps: it fills
over the first waves (about 3,000 writes per wave of 100 x 4).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from typing import Any

from _common import Operator, add_operator_source, bench_client, load_average, publish, pytorch_job
from _controller_scale import Tracker, stack_options, wait_until
from _gcpauses import OwnPauses, describe, frozen_objects, operator_gc_pauses, own_status_kb
from _retained import Retained

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import job_resource


async def churn(args: argparse.Namespace, own_gc: OwnPauses) -> dict[str, Any]:
    jobs, replicas = args.jobs, args.replicas
    tracker = Tracker()
    ref = job_resource("PyTorchJob")
    waves: list[dict[str, Any]] = []
    retained = Retained(args.tracemalloc)
    options = stack_options(pods=jobs * replicas)
    options.watch_window = args.watch_window
    async with DevStack(options) as stack:
        stack.cluster.store.listeners.append(tracker)
        client = await bench_client(stack.cluster.kubeconfig_path)
        op = Operator(
            stack.cluster.kubeconfig_path, extra=args.operator_args.split(), source=args.operator_source
        )
        sem = asyncio.Semaphore(32)
        try:
            own_gc.start()
            op.start()
            await op.wait_ready()
            t_end = time.perf_counter() + 60 * args.minutes
            wave = 0
            while time.perf_counter() < t_end or wave < 2:
                t0 = time.perf_counter()
                names = [f"churn-{wave}-{i:05d}" for i in range(jobs)]

                async def create(name: str) -> None:
                    async with sem:
                        await client.create(ref, pytorch_job(name, replicas), namespace="default")

                async def delete(name: str) -> None:
                    async with sem:
                        await client.delete(ref, "default", name, propagation_policy="Background")

                await asyncio.gather(*(create(n) for n in names))
                await wait_until(
                    lambda: tracker.count_pods("Running") == jobs * replicas,
                    args.timeout,
                    "every pod to be Running",
                    tracker.progress,
                )
                await asyncio.gather(*(delete(n) for n in names))
                await wait_until(
                    lambda: not tracker.pods and not tracker.jobs,
                    args.timeout,
                    "every job and pod to be gone",
                    tracker.progress,
                )
                await asyncio.sleep(1)  # the operator's watches deliver the deletes
                tracker.status_writes.clear()  # the benchmark's own per-job notes, not devcluster's
                tracker.first_status.clear()
                _, text = await op.get("/metrics")
                waves.append(
                    {
                        "wave": wave,
                        "seconds": round(time.perf_counter() - t0, 1),
                        "operator_rss_mb": round(op.rss_mb(), 1),
                        "operator_frozen": frozen_objects(text),
                        "benchmark_rss_mb": round(own_status_kb("VmRSS") / 1024, 1),
                        "benchmark_frozen": gc.get_freeze_count(),
                        "devcluster": retained.sample(stack) if wave >= args.from_wave else None,
                    }
                )
                print(waves[-1], flush=True)
                wave += 1
            _, text = await op.get("/metrics")
            op_rss_peak = op.rss_peak_mb()
            own_gc.stop()
        finally:
            op.stop()
            await client.close()
    frozen_at_end = gc.get_freeze_count()
    gc.unfreeze()
    freed_by_thorough = gc.collect()
    return {
        "benchmark": "gc_churn",
        "jobs_per_wave": jobs,
        "replicas": replicas,
        "waves": waves,
        "load_average_1m": load_average(),
        "operator_gc_pauses": operator_gc_pauses(text),
        "operator_rss_peak_mb": round(op_rss_peak, 1),
        "benchmark_process_gc": own_gc.summary(),
        "benchmark_frozen_at_end": frozen_at_end,
        "benchmark_freed_by_final_thorough_collection": freed_by_thorough,
        "watch_window": args.watch_window,
        "devcluster_growth_from_wave": args.from_wave,
        "devcluster_growth": retained.growth(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--operator-args", default="", help="extra `kubetrain controller` flags")
    parser.add_argument(
        "--watch-window",
        type=int,
        default=10000,
        help="devcluster's watch history in events (kubetrain dev's default); it fills over the first "
        "waves and then stays, so waves before it is full show its growth",
    )
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="trace allocations and report the sites whose retained size grew from --from-wave to the last "
        "(slows the devcluster side)",
    )
    parser.add_argument(
        "--from-wave",
        type=int,
        default=4,
        help="devcluster's growth is measured from this wave to the last (default 4: by then the "
        "watch history of 100 x 4 waves is full)",
    )
    add_operator_source(parser)
    args = parser.parse_args()
    res = asyncio.run(churn(args, OwnPauses()))
    first, last = res["waves"][1], res["waves"][-1]  # wave 0 warms the caches' structures up
    own = res["benchmark_process_gc"]
    print(
        f"churn {len(res['waves'])} waves of {res['jobs_per_wave']} x {res['replicas']} "
        f"(KUBETRAIN_GC_FREEZE factor {own['freeze_policy']}): after wave 1 / last: operator RSS "
        f"{first['operator_rss_mb']} / {last['operator_rss_mb']} MB, frozen {first['operator_frozen']} / "
        f"{last['operator_frozen']}; benchmark RSS {first['benchmark_rss_mb']} / "
        f"{last['benchmark_rss_mb']} MB, "
        f"frozen {first['benchmark_frozen']} / {last['benchmark_frozen']}; final thorough collection freed "
        f"{res['benchmark_freed_by_final_thorough_collection']}; pauses: operator "
        f"{describe(res['operator_gc_pauses'], 'max_ms_le')}; benchmark {describe(own['pauses'])}"
    )
    start = res["waves"][min(args.from_wave, len(res["waves"]) - 1)]
    print(f"devcluster growth from wave {start['wave']} to the last: {res['devcluster_growth']}")
    per_wave = (last["benchmark_rss_mb"] - start["benchmark_rss_mb"]) / max(1, last["wave"] - start["wave"])
    print(f"benchmark (devcluster) RSS growth per wave from wave {start['wave']}: {per_wave:.2f} MB")
    publish(res["benchmark"], res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
