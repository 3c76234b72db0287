"""Webhook server stack, side by side: kubetrain's WebhookServer vs a minimal kopf admission handler.

    .venv/bin/python benchmarks/bench_webhook_kopf.py [--clients 64] [--seconds 8] [--path /validate]
        [--rounds 2] [--jobs small,large,xlarge] [--client-processes 1]

Both servers do the same work through kubetrain's pure functions — /validate: `validate_job`
(the request carries the already-defaulted job, as kube-apiserver sends it after mutation);
/mutate: `default_job` and a JSONPatch back — so the ratio isolates the server stack (TLS,
HTTP, AdmissionReview handling, framework overhead). The load is bench_webhook.py's
(`_webhook_load.measure`): 64 clients with one keep-alive TLS connection each, back to back,
for the small job, the large job (4 replica types x 4 containers) and the xlarge job (4 x 16 =
64 containers, the issue's "64 replica types' worth of containers"). Each server runs alone in
a child process pinned to CPU 0; the clients run in `--client-processes` child processes
pinned to the other CPUs. Client and server CPU utilisation over each measured window are
reported as in bench_webhook.py.

The kopf peer is a real kopf operator (`kopf.operator`, standalone, cluster-wide) against an
in-process devcluster with kubetrain's CRDs installed (kopf discovers the resources it serves
from the cluster); `settings.admission.server = kopf.WebhookServer(...)` with the same
certificate, `settings.admission.managed = None` (no webhook configuration is written),
handlers `kopf.on.validate("kubetrain.io", "v1", plural, id="validate")` / `kopf.on.mutate(...,
id="mutate")` for each job kind, served at /validate and /mutate. The servers alternate for
`--rounds` rounds (noise on a shared machine hits both).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import ssl
import sys
import tempfile
import time
from typing import Any

import aiohttp
from _common import api_server_only, free_port, load_average, publish
from _webhook_jobs import JOBS, parse_jobs, review_body
from _webhook_load import client_cpu_set, cpu_summary, measure_review, serve

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.dev.stack import DevStack
from kubetrain.jobs.defaulting import default_job


def serve_kopf(kubeconfig: str, cert_dir: str, port: int, cpu: int | None) -> None:
    """A minimal kopf operator whose only handlers are admission handlers (child process)."""
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})
    os.environ["KUBECONFIG"] = kubeconfig
    logging.basicConfig(level=os.environ.get("BENCH_KOPF_LOG_LEVEL", "WARNING"))
    import kopf

    from kubetrain.jobs.validation import validate_job

    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.admission.server = kopf.WebhookServer(
            addr="127.0.0.1",
            port=port,
            certfile=os.path.join(cert_dir, "tls.crt"),
            pkeyfile=os.path.join(cert_dir, "tls.key"),
        )
        settings.admission.managed = None
        settings.posting.enabled = False

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> Any:
        return kopf.login_with_kubeconfig(**kwargs)

    def validate(body: kopf.Body, old: Any, warnings: list[str], **_: Any) -> None:
        result = validate_job(dict(body), dict(old) if old else None)
        warnings.extend(result.warnings)
        if result.errors:
            raise kopf.AdmissionError("; ".join(str(e) for e in result.errors), code=422)

    def mutate(body: kopf.Body, patch: kopf.Patch, warnings: list[str], **_: Any) -> None:
        original = dict(body)
        defaulted = default_job(original)
        warnings.extend(defaulted.warnings)
        for key in ("metadata", "spec"):
            if defaulted.obj.get(key) != original.get(key):
                patch[key] = defaulted.obj[key]

    for plural in ("pytorchjobs", "tfjobs", "mxjobs"):
        kopf.on.validate("kubetrain.io", "v1", plural, id="validate", registry=registry)(validate)
        kopf.on.mutate("kubetrain.io", "v1", plural, id="mutate", registry=registry)(mutate)

    asyncio.run(kopf.operator(registry=registry, standalone=True, clusterwide=True))


async def wait_serving(url: str, ctx: ssl.SSLContext, body: bytes, limit: float = 60.0) -> None:
    deadline = time.perf_counter() + limit
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as s:
        while True:
            try:
                async with s.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
                    text = await r.text()
                    if r.status == 200 and '"allowed": true' in text.replace(
                        '"allowed":true', '"allowed": true'
                    ):
                        return
            except aiohttp.ClientError:
                pass
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{url} is not serving")
            await asyncio.sleep(0.2)


def _port_queue_server(cert_dir: str, cpu: int | None) -> tuple[Any, int]:
    mp = multiprocessing.get_context("spawn")
    ports = mp.Queue()
    proc = mp.Process(target=serve, args=(cert_dir, ports, cpu), daemon=True)
    proc.start()
    return proc, int(ports.get(timeout=60))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cpu = None if args.server_cpu < 0 else args.server_cpu
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    ca_pem = bundle.ca.cert_pem.decode()
    ctx = ssl.create_default_context(cadata=ca_pem)
    client_cpus = client_cpu_set(cpu)
    jobs = {name: JOBS[name]() for name in args.jobs}
    bodies = {name: review_body(job, args.path) for name, job in jobs.items()}
    rounds: list[dict[str, Any]] = []
    opts = api_server_only()
    with tempfile.TemporaryDirectory() as cert_dir:
        write_cert_dir(cert_dir, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
        async with DevStack(opts) as stack:
            mp = multiprocessing.get_context("spawn")
            for i in range(args.rounds):
                row: dict[str, Any] = {"round": i + 1}
                for server in ("kubetrain", "kopf"):
                    if server == "kubetrain":
                        proc, port = await asyncio.to_thread(_port_queue_server, cert_dir, cpu)
                    else:
                        port = free_port()
                        proc = mp.Process(
                            target=serve_kopf,
                            args=(stack.cluster.kubeconfig_path, cert_dir, port, cpu),
                            daemon=True,
                        )
                        proc.start()
                    try:
                        url = f"https://127.0.0.1:{port}{args.path}"
                        await wait_serving(url, ctx, bodies[next(iter(bodies))])
                        for name, body in bodies.items():
                            res = await asyncio.to_thread(
                                measure_review, url, ca_pem, body, args, client_cpus, proc.pid
                            )
                            row[f"{server}_{name}"] = res
                            print(
                                f"round {i + 1} {server:9s} {args.path} {name}: "
                                f"{res['reviews_per_s']} reviews/s, "
                                f"p50 {res['p50_ms']} ms, p99 {res['p99_ms']} ms, {res['errors']} errors; "
                                f"{cpu_summary(res)}",
                                flush=True,
                            )
                    finally:
                        proc.terminate()
                        await asyncio.to_thread(proc.join, 10)
                rounds.append(row)
    summary: dict[str, Any] = {}
    for name in jobs:
        for server in ("kubetrain", "kopf"):
            best = max(r[f"{server}_{name}"]["reviews_per_s"] for r in rounds)
            summary[f"{server}_{name}_best_reviews_per_s"] = best
        summary[f"{name}_ratio_kubetrain_over_kopf"] = round(
            summary[f"kubetrain_{name}_best_reviews_per_s"] / summary[f"kopf_{name}_best_reviews_per_s"], 2
        )
    return {
        "benchmark": "webhook_kopf",
        "path": args.path,
        "clients": args.clients,
        "client_processes": args.client_processes,
        "seconds": args.seconds,
        "server_cpus": 1 if cpu is not None else None,
        "load_average_1m": load_average(),
        "rounds": rounds,
        "summary": summary,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--path", default="/validate", choices=("/validate", "/mutate"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--jobs", type=parse_jobs, default=list(JOBS), help="comma-separated: small,large,xlarge"
    )
    parser.add_argument(
        "--client-processes", type=int, default=1, help="split the client connections over N processes"
    )
    parser.add_argument("--server-cpu", type=int, default=0, help="CPU to pin the server to (-1: no pinning)")
    args = parser.parse_args()
    res = asyncio.run(run(args))
    s = res["summary"]
    parts = [
        f"{name} {s[f'kubetrain_{name}_best_reviews_per_s']} vs {s[f'kopf_{name}_best_reviews_per_s']} "
        f"reviews/s (x{s[f'{name}_ratio_kubetrain_over_kopf']})"
        for name in args.jobs
    ]
    print(
        f"webhook {args.path} kubetrain vs kopf ({args.clients} TLS clients, "
        f"{args.client_processes} client process(es), best of {args.rounds}): " + ", ".join(parts)
    )
    publish("webhook_kopf", res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
