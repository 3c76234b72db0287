"""Webhook throughput and latency over TLS: 64 concurrent clients against one server process.

    .venv/bin/python benchmarks/bench_webhook.py [--clients 64] [--seconds 10] [--path /validate]
        [--jobs small,large,xlarge] [--client-processes 1] [--server-cpu 0]

The server (WebhookServer, one asyncio process, pinned to one CPU when the OS allows) runs in a
child process; the clients run in `--client-processes` other child processes (default one),
pinned to the remaining CPUs, with one keep-alive TLS connection each, and send
AdmissionReview requests back to back. Each connection's first request (TLS handshake) is not
measured; the processes start their measured window together and their latencies are merged.
Jobs: small (1 replica type, 1 container), large (a TFJob with 4 replica types x 4 containers,
each with env, volumes, resources) and xlarge (4 x 16 = 64 such containers). Reports the CPU
utilisation of the client processes and of the server over the measured window, so a client
that saturates its own core shows up as such. The server has the garbage-collector set-up of
`kubetrain webhook` (the freeze policy, kubetrain.serving.gcfreeze; `KUBETRAIN_GC_FREEZE=off`
runs it without) and its collections during each job's window are reported (`server_gc`).
Prints a one-line summary per job, a JSON
document, and writes it to benchmarks/results/. Targets (DESIGN.md): >= 1,500 reviews/s,
p99 <= 20 ms.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
from typing import Any

from _common import free_port, load_average, publish
from _gcpauses import describe
from _webhook_jobs import JOBS, count_containers, parse_jobs, review_body
from _webhook_load import client_cpu_set, cpu_summary, measure_review, serve

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--path", default="/validate", choices=("/validate", "/mutate"))
    parser.add_argument(
        "--jobs", type=parse_jobs, default=list(JOBS), help="comma-separated: small,large,xlarge"
    )
    parser.add_argument(
        "--client-processes", type=int, default=1, help="split the client connections over N processes"
    )
    parser.add_argument("--server-cpu", type=int, default=0, help="CPU to pin the server to (-1: no pinning)")
    parser.add_argument(
        "--webhook-workers",
        type=int,
        default=1,
        help="server processes sharing the port (SO_REUSEPORT, as `kubetrain webhook --webhook-workers N`); "
        "with N > 1 they are not pinned and the server CPU is not reported",
    )
    args = parser.parse_args()

    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    ca_pem = bundle.ca.cert_pem.decode()
    with tempfile.TemporaryDirectory() as cert_dir:
        write_cert_dir(cert_dir, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
        mp = multiprocessing.get_context("spawn")
        ports = mp.Queue()
        workers = max(1, args.webhook_workers)
        cpu = None if args.server_cpu < 0 or workers > 1 else args.server_cpu
        client_cpus = client_cpu_set(cpu)
        shared_port = free_port() if workers > 1 else 0
        gc_asks, gc_answers = mp.Queue(), mp.Queue()  # the first server's collections, per job
        gc_queues = (gc_asks, gc_answers)
        procs = [
            mp.Process(
                target=serve,
                args=(cert_dir, ports, cpu, shared_port, workers > 1, *(gc_queues if i == 0 else ())),
                daemon=True,
            )
            for i in range(workers)
        ]
        for p in procs:
            p.start()
        proc = procs[0]
        try:
            port = [ports.get(timeout=30) for _ in procs].pop()
            url = f"https://127.0.0.1:{port}{args.path}"
            results: dict[str, Any] = {
                "benchmark": "webhook",
                "clients": args.clients,
                "client_processes": args.client_processes,
                "seconds": args.seconds,
                "path": args.path,
                "server_cpus": 1 if cpu is not None else None,
                "webhook_workers": workers,
                "load_average_1m": load_average(),
            }
            for name in args.jobs:
                job = JOBS[name]()
                body = review_body(job, args.path)
                gc_asks.put("reset")
                gc_answers.get(timeout=30)
                res = measure_review(url, ca_pem, body, args, client_cpus, proc.pid if workers == 1 else None)
                gc_asks.put("since reset")
                res["server_gc"] = gc_answers.get(timeout=30)
                res["containers"] = count_containers(job)
                results[name] = res
                print(
                    f"webhook {args.path} {name} job ({len(body)} B): {res['reviews_per_s']} reviews/s, "
                    f"p50 {res['p50_ms']} ms, p99 {res['p99_ms']} ms, p99.9 {res['p99_9_ms']} ms, "
                    f"max {res['max_ms']} ms, {res['over_50ms']} over 50 ms, {res['errors']} errors "
                    f"({args.clients} TLS clients, {res['requests']} requests; {cpu_summary(res)}; "
                    f"server GC {describe(res['server_gc']['pauses'])})",
                    flush=True,
                )
            publish("webhook", results)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
