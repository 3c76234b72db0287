"""Webhook throughput and latency over TLS: 64 concurrent clients against one server process.

    .venv/bin/python benchmarks/bench_webhook.py [--clients 64] [--seconds 10] [--path /validate]

The server (WebhookServer, one asyncio process, pinned to one CPU when the OS allows) runs in a
child process; the clients run in this process with one keep-alive TLS connection each and
send AdmissionReview requests back to back for a small job (1 replica type, 1 container) and
a large job (5 replica types, 4 containers each with env, volumes, resources). Prints a
one-line summary per job and a JSON document. Targets (DESIGN.md): >= 1,500 reviews/s, p99 <= 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import ssl
import statistics
import sys
import tempfile
import time
from typing import Any

import aiohttp

from kubetrain.api.defaulting import default_job
from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.webhook.review import request_review


def small_job() -> dict[str, Any]:
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "small", "namespace": "bench"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 2,
                    "template": {
                        "spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.3"}]}
                    },
                }
            }
        },
    }


def large_job() -> dict[str, Any]:
    def container(i: int) -> dict[str, Any]:
        return {
            "name": "tensorflow" if i == 0 else f"sidecar-{i}",
            "image": f"registry.example.com/team/image-{i}:1.{i}",
            "command": ["python", "-m", "train"],
            "args": [f"--shard={i}", "--epochs=10"],
            "env": [{"name": f"VAR_{k}", "value": str(k)} for k in range(20)],
            "resources": {
                "requests": {"cpu": "2", "memory": "8Gi"},
                "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
            },
            "volumeMounts": [
                {"name": "data", "mountPath": "/data"},
                {"name": "cache", "mountPath": "/cache"},
            ],
            "ports": [{"name": f"p{i}", "containerPort": 9000 + i}],
        }

    template = {
        "metadata": {"labels": {"team": "research"}, "annotations": {"a": "b"}},
        "spec": {
            "containers": [container(i) for i in range(4)],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            ],
            "nodeSelector": {"gpu": "a100"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }
    specs = {
        t: {"replicas": n, "template": template}
        for t, n in (("Chief", 1), ("PS", 4), ("Worker", 32), ("Evaluator", 1))
    }
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TFJob",
        "metadata": {"name": "large", "namespace": "bench"},
        "spec": {"tfReplicaSpecs": specs, "runPolicy": {"backoffLimit": 3}},
    }


def serve(cert_dir: str, port_queue: Any, cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})
    from kubetrain.webhook.server import WebhookServer

    async def main() -> None:
        server = WebhookServer(cert_dir=cert_dir, host="127.0.0.1", port=0)
        await server.start()
        port_queue.put(server.port)
        await asyncio.Event().wait()

    asyncio.run(main())


async def run_clients(
    url: str, ctx: ssl.SSLContext, body: bytes, clients: int, seconds: float
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal errors
        connector = aiohttp.TCPConnector(ssl=ctx, limit=1)
        async with aiohttp.ClientSession(connector=connector) as s:
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                async with s.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
                    await r.read()
                    if r.status != 200:
                        errors += 1
                latencies.append(time.perf_counter() - t0)

    # warm-up: open every connection (TLS handshakes are not what is measured)
    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [latencies[0]] * 99
    return {
        "requests": len(latencies),
        "errors": errors,
        "seconds": round(elapsed, 2),
        "reviews_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(q[49] * 1000, 2),
        "p99_ms": round(q[98] * 1000, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--path", default="/validate", choices=("/validate", "/mutate"))
    parser.add_argument("--server-cpu", type=int, default=0, help="CPU to pin the server to (-1: no pinning)")
    args = parser.parse_args()

    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    with tempfile.TemporaryDirectory() as cert_dir:
        write_cert_dir(cert_dir, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
        ctx = ssl.create_default_context(cadata=bundle.ca.cert_pem.decode())
        mp = multiprocessing.get_context("spawn")
        ports = mp.Queue()
        cpu = None if args.server_cpu < 0 else args.server_cpu
        proc = mp.Process(target=serve, args=(cert_dir, ports, cpu), daemon=True)
        proc.start()
        try:
            port = ports.get(timeout=30)
            url = f"https://127.0.0.1:{port}{args.path}"
            results: dict[str, Any] = {
                "clients": args.clients,
                "path": args.path,
                "server_cpus": 1 if cpu is not None else None,
            }
            for name, job in (("small", small_job()), ("large", large_job())):
                obj = default_job(job).obj if args.path == "/validate" else job
                body = json.dumps(request_review(obj)).encode()
                res = asyncio.run(run_clients(url, ctx, body, args.clients, args.seconds))
                res["body_bytes"] = len(body)
                results[name] = res
                print(
                    f"webhook {args.path} {name} job ({len(body)} B): {res['reviews_per_s']} reviews/s, "
                    f"p50 {res['p50_ms']} ms, p99 {res['p99_ms']} ms, {res['errors']} errors "
                    f"({args.clients} TLS clients, {res['requests']} requests)"
                )
            print(json.dumps(results))
        finally:
            proc.terminate()
            proc.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
