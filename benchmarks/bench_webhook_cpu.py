"""CPU per admission review in-process: decode, decide and encode, no HTTP or TLS.

    .venv/bin/python benchmarks/bench_webhook_cpu.py [--reviews 400] [--rounds 3]
        [--jobs small,large,xlarge]

What one review costs the webhook's own code, for each job size of bench_webhook.py and both
paths (the same body repeated, so the template cache is warm, as in the TLS benchmark). Each
figure is the least of `--rounds` rounds of `time.process_time()` over `--reviews` reviews: the
round least disturbed by other work on a shared machine. The TLS benchmark's server needs this
plus TLS and HTTP; its p99 target at 64 clients allows about 0.3 ms per review all in.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _common import load_average, publish
from _webhook_jobs import JOBS, parse_jobs, review_body

from kubetrain.webhook.decider import Decider


def cpu_ms_per_review(body: bytes, webhook: str, reviews: int, rounds: int) -> float:
    decider = Decider()
    decider.answer(body, webhook)  # caches warm, as in a running server
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(reviews):
            decider.answer(body, webhook)
        best = min(best, (time.process_time() - started) / reviews)
    return round(best * 1000, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reviews", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--jobs", type=parse_jobs, default=list(JOBS), help="comma-separated: small,large,xlarge"
    )
    args = parser.parse_args()
    results: dict[str, Any] = {"benchmark": "webhook-cpu", "load_average_before": load_average()}
    for name in args.jobs:
        for path in ("/validate", "/mutate"):
            body = review_body(JOBS[name](), path)
            ms = cpu_ms_per_review(body, path.strip("/"), args.reviews, args.rounds)
            results[f"{name}{path}"] = {"bytes": len(body), "cpu_ms_per_review": ms}
            print(f"webhook {path} {name} job ({len(body)} B): {ms} ms of CPU per review")
    results["load_average_after"] = load_average()
    publish("webhook-cpu", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
