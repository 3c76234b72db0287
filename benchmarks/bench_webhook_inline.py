"""How long a review decided on the event loop can hold it: CPU per review in-process for bodies
at the edges of the inline tier (kubetrain.webhook.tiers), and where each is decided.

    .venv/bin/python benchmarks/bench_webhook_inline.py [--reviews 20] [--rounds 3]

Each figure is the least of `--rounds` rounds of `time.process_time()` over `--reviews` reviews
(decode, shape limits, decide, encode: what the loop runs for an inline review). Bodies: the
xlarge job of bench_webhook.py; the slowest bodies found up to 96 KiB with at most 4,096
objects and lists (many unknown fields, brackets nested deep, many small maps and scalars); and,
for the bound the 64 KiB tier already had, lists nested 50 deep filling 64 KiB.
"""

from __future__ import annotations

import argparse
from typing import Any

import orjson
from _common import load_average, publish
from _webhook_jobs import JOBS, review_body
from bench_webhook_cpu import cpu_ms_per_review

from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.review import request_review
from kubetrain.webhook.tiers import decided_inline


def nested_list(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def job_review(container_fields: dict[str, Any]) -> bytes:
    container = {"name": "c", "image": "i", **container_fields}
    job = {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "edge", "namespace": "bench"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [container]}}}}},
    }
    return orjson.dumps(request_review(default_job(job).obj))


def bodies() -> dict[str, bytes]:
    return {
        "xlarge job (64 containers)": review_body(JOBS["xlarge"](), "/validate"),
        "7,000 unknown fields": job_review({f"f{i}": i for i in range(7000)}),
        "98 lists nested 40 deep": job_review({"junk": [nested_list(40)] * 98, "pad": "x" * 80_000}),
        "4,000 maps and 40,000 numbers": job_review({"junk": [{}] * 4000, "ints": [1] * 40_000}),
        "64 KiB: 600 lists nested 50 deep": job_review({"junk": [nested_list(50)] * 600}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reviews", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, Any] = {"benchmark": "webhook-inline", "load_average_before": load_average()}
    for name, body in bodies().items():
        brackets = body.count(b"{") + body.count(b"[")
        where = "inline" if decided_inline(body) else "off the loop"
        row: dict[str, Any] = {"bytes": len(body), "brackets": brackets, "decided": where}
        for webhook in ("validate", "mutate"):
            row[webhook] = cpu_ms_per_review(body, webhook, args.reviews, args.rounds)
        results[name] = row
        print(
            f"{name}: {len(body)} B, {brackets} brackets, {where}: "
            f"/validate {row['validate']} ms, /mutate {row['mutate']} ms of CPU per review"
        )
    results["load_average_after"] = load_average()
    publish("webhook-inline", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
