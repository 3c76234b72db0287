"""CPU per work-queue hand-out: add, a worker's take of the key, a no-op reconcile, done.

    .venv/bin/python benchmarks/bench_handout.py [--keys 20000] [--rounds 5]
    PYTHONPATH=<dir> .venv/bin/python benchmarks/bench_handout.py   # another tree's kubetrain

What the reconcile loop itself costs per key, without the reconcile (kubetrain.operator.loop
with one worker over kubetrain.kube.workqueue): the bookkeeping around every reconcile, which
controller-runtime's series (kubetrain.serving.crmetrics) add to. Each figure is the least of
`--rounds` rounds of `time.process_time()` over `--keys` distinct keys, added at once and
drained by the worker.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from typing import Any

from _common import load_average, publish

from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator.loop import ReconcileLoop


class _Loop(ReconcileLoop):
    log = logging.getLogger("bench.handout")

    def __init__(self, expected: int) -> None:
        self.queue = WorkQueue(name="bench")
        self.informers: list[Any] = []
        self._workers = []
        self.expected = expected
        self.seen = 0
        self.finished = asyncio.Event()

    async def reconcile(self, key: str) -> None:
        self.seen += 1
        if self.seen == self.expected:
            self.finished.set()


async def round_seconds(keys: list[str]) -> float:
    loop = _Loop(len(keys))
    loop.start_workers(1, "bench worker")
    started = time.process_time()
    for key in keys:
        loop.queue.add(key)
    await loop.finished.wait()
    spent = time.process_time() - started
    await loop.stop_workers()
    return spent


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    keys = [f"PyTorchJob.kubeflow.org/ns/job-{i}" for i in range(args.keys)]
    best = min([await round_seconds(keys) for _ in range(args.rounds)])
    per_key_us = best / args.keys * 1e6
    print(f"{per_key_us:.2f} µs CPU per hand-out (add, take, no-op reconcile, done), best of {args.rounds}")
    publish(
        "handout",
        {
            "keys": args.keys,
            "rounds": args.rounds,
            "us_per_handout": round(per_key_us, 2),
            "load_average_1m": load_average(),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
