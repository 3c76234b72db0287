"""What full garbage collections cost a review worker process deciding a big review, with and
without the freeze policy its start-up (`kubetrain.webhook.processes._warm`) installs.

    .venv/bin/python benchmarks/bench_webhook_worker_gc.py [--reviews 20] [--copies 16]

For each `KUBETRAIN_GC_FREEZE` setting (`off`, then the default), a fresh spawned process starts
like a review worker (imports the decision code, runs `_warm`) and decides `--reviews` /validate
reviews of one big job: bench_webhook.py's xlarge TFJob with its Worker template's containers
repeated `--copies` times (~1.1 MB with 16). Reports the wall time per review (mean, max) and the
full (generation-2) collections during them: their count and total pause.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import time
from typing import Any

from _common import load_average, publish
from _webhook_jobs import big_tf_job, review_body


def big_body(copies: int) -> bytes:
    job = big_tf_job("huge", 16)
    template = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    template["containers"] = template["containers"] * copies
    return review_body(job, "/validate")


def run_worker(setting: str, body: bytes, reviews: int, out: Any) -> None:
    os.environ["KUBETRAIN_GC_FREEZE"] = setting
    from kubetrain.webhook.decider import Decider
    from kubetrain.webhook.processes import _warm

    _warm()
    full: list[float] = []
    started = [0.0]

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        elif info["generation"] == 2:
            full.append(time.perf_counter() - started[0])

    gc.callbacks.append(record)
    decider = Decider()
    times = []
    for _ in range(reviews):
        t = time.perf_counter()
        decider.answer(body, "validate")
        times.append(time.perf_counter() - t)
    out.put(
        {
            "freeze": setting,
            "frozen_objects": gc.get_freeze_count(),
            "mean_ms": round(1000 * sum(times) / len(times), 1),
            "max_ms": round(1000 * max(times), 1),
            "full_collections": len(full),
            "full_total_ms": round(1000 * sum(full), 1),
        }
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reviews", type=int, default=20)
    parser.add_argument("--copies", type=int, default=16)
    args = parser.parse_args()
    body = big_body(args.copies)
    mp = multiprocessing.get_context("spawn")
    results: dict[str, Any] = {"benchmark": "webhook_worker_gc", "body_bytes": len(body), "runs": []}
    results["load_average_1m"] = load_average()
    for setting in ("off", "4"):
        out = mp.Queue()
        proc = mp.Process(target=run_worker, args=(setting, body, args.reviews, out))
        proc.start()
        res = out.get(timeout=600)
        proc.join()
        results["runs"].append(res)
        print(
            f"KUBETRAIN_GC_FREEZE={setting}: {len(body)} B review, {res['mean_ms']} ms mean, "
            f"{res['max_ms']} ms max; {res['full_collections']} full collections, "
            f"{res['full_total_ms']} ms in total ({res['frozen_objects']} objects frozen)",
            flush=True,
        )
    publish("webhook_worker_gc", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
