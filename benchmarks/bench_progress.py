"""The training-progress endpoint under load: N pods reporting once per 5 s (the Kubeflow SDK's
rate), against `kubetrain run` as its own process (webhook + controller + status server).

    .venv/bin/python benchmarks/bench_progress.py [--jobs 100] [--pods-per-job 10] [--duration 30]
        [--webhook-workers 2] [--status-server-process] [--pin]

devcluster, its CRDs and the pod simulator run in this process; the operator is a child
process (`kubetrain run`, its certificate for 127.0.0.1); the reporters are a second child
process (aiohttp, one keep-alive connection per pod, each pod reporting every `--period` s with
a random phase, as the SDK would). The pods are real: the operator injects the SDK env and the
projected volume, the simulated kubelet gets each pod a bound token by TokenRequest, and every
report is checked by TokenReview (cached) and against the pod.

The admission prober is a third child process (one AdmissionReview to /validate every 20 ms,
before and during the reports). `--status-server-process` runs the endpoint in the operator's
child (`kubetrain status-server`). `--pin` (2+ CPUs) gives the operator's own process and the
prober CPU 0 and everything else — this process (devcluster, the pod simulator), the reporters,
the status-server child — the other CPUs, as in a cluster where the API server and the training
pods run on other machines than the operator: then admission latency shows what the reports
cost the operator, not what the load generators cost the machine.

Prints JSON: report latency (p50/p99/max, answer codes) seen by the reporters; status writes
(merge patches of status.trainerStatus) per job per 5 s; the operator's CPU per 1,000 pods
(minus its idle CPU over the same time); admission p99 (AdmissionReviews POSTed to /validate)
before and during the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from kubetrain.api import trainerstatus as ts
from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import NAMESPACES, job_resource

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    free_port,
    histogram_diff,
    histogram_quantile,
    load_average,
    parse_reconcile_histogram,
    proc_cpu_seconds,
    pytorch_manifest,
    requests_by_verb,
)
from _cpus import cpu_seconds, pin, status_child

REPORT_HISTOGRAM = "kubetrain_status_report_duration_seconds"
WEBHOOK_HISTOGRAM = "kubetrain_webhook_request_duration_seconds"
RECONCILE_HISTOGRAM = "kubetrain_reconcile_duration_seconds"


def job(name: str, workers: int) -> dict[str, Any]:
    counts = {rtype: n for rtype, n in (("Master", 1), ("Worker", workers - 1)) if n > 0}
    return pytorch_manifest(name, counts, restart_policy="OnFailure")


def quantiles(ms: list[float]) -> dict[str, Any]:
    if not ms:
        return {}
    ms = sorted(ms)
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 2),
        "max_ms": round(ms[-1], 2),
    }


# ---- the reporters (child process) ----------------------------------------------------------


async def reporters(spec: dict[str, Any], duration: float, period: float, warmup: float) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=spec["ca"])
    connector = aiohttp.TCPConnector(limit=0, ssl=ctx)
    latencies: list[float] = []  # every report after the warm-up
    first: list[float] = []  # each pod's first report (its TLS handshake and TokenReview)
    codes: dict[int, int] = {}

    async def pod(url: str, token: str, index: int) -> None:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        # Pods start over the warm-up (as a job's pods start training), then report every period.
        start_at = random.uniform(0, warmup)
        await asyncio.sleep(start_at)
        measure_from = time.monotonic() + (warmup - start_at)
        end = measure_from + duration
        step = 0
        while time.monotonic() < end:
            step += 1
            body = {
                "trainerStatus": {
                    "progressPercentage": min(100, step),
                    "estimatedRemainingSeconds": 3600 - step,
                    "metrics": [
                        {"name": "loss", "value": f"{1 / step:.4f}"},
                        {"name": "step", "value": str(step)},
                    ],
                }
            }
            start = time.perf_counter()
            try:
                async with session.post(url, json=body, headers=headers) as resp:
                    await resp.read()
                    codes[resp.status] = codes.get(resp.status, 0) + 1
            except aiohttp.ClientError:
                codes[0] = codes.get(0, 0) + 1
            elapsed = (time.perf_counter() - start) * 1000
            if step == 1:
                first.append(elapsed)
            elif time.monotonic() >= measure_from:
                latencies.append(elapsed)
                codes[-1] = codes.get(-1, 0)  # placeholder removed below
            await asyncio.sleep(period)

    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(pod(p["url"], p["token"], i) for i, p in enumerate(spec["pods"])))
    codes.pop(-1, None)
    return {"latency": quantiles(latencies), "first_report": quantiles(first), "codes": codes}


# ---- admission probes ------------------------------------------------------------------------


async def admission(url: str, ca: str, n: int) -> dict[str, Any]:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "bench",
            "kind": {"group": "kubetrain.io", "version": "v1", "kind": "PyTorchJob"},
            "resource": {"group": "kubetrain.io", "version": "v1", "resource": "pytorchjobs"},
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "bench"},
            "object": {**job("probe", 4), "metadata": {"name": "probe", "namespace": "default"}},
        },
    }
    ctx = ssl.create_default_context(cafile=ca)
    out: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        for _ in range(n):
            start = time.perf_counter()
            async with session.post(f"{url}/validate", json=review) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            out.append((time.perf_counter() - start) * 1000)
            await asyncio.sleep(0.02)
    return quantiles(out)


async def server_histogram(port: int, name: str = REPORT_HISTOGRAM) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as resp:
        return parse_reconcile_histogram(await resp.text(), name)


def summary(hist: dict[str, Any]) -> dict[str, Any]:
    """What the operator itself measured (its histogram; quantiles interpolated in buckets)."""
    return {
        "n": int(hist["count"]),
        "p50_ms": round(1000 * (histogram_quantile(hist, 0.5) or 0), 2),
        "p99_ms": round(1000 * (histogram_quantile(hist, 0.99) or 0), 2),
    }


# ---- the run ---------------------------------------------------------------------------------


# ---- processes and CPUs ----------------------------------------------------------------------


async def probe(args: argparse.Namespace, url: str, ca: str, cpus: set[int] | None) -> dict[str, Any]:
    """Admission latency seen by a prober process of its own (on the operator's CPU when pinned)."""
    prober = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--probe", url, "--ca", ca, "--probes", str(args.probes),
        stdout=asyncio.subprocess.PIPE, preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
    )  # fmt: skip
    out, _ = await prober.communicate()
    result: dict[str, Any] = json.loads(out)
    return result


async def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-progress-"))
    cert_dir = work / "certs"
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    write_cert_dir(cert_dir, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    ca_file = str(cert_dir / "ca.crt")
    options = DevStackOptions(webhook=False, controller=False, simulated_nodes=10, watch_window=100000)
    webhook_port, status_port, metrics_port = free_port(), free_port(), free_port()
    cpus = sorted(os.sched_getaffinity(0))
    op_cpus: set[int] | None = None
    rest: set[int] = set(cpus)
    if args.pin:
        if len(cpus) < 2:
            raise SystemExit("--pin needs at least 2 CPUs")
        op_cpus, rest = {cpus[0]}, set(cpus[1:])
        pin(os.getpid(), rest)  # devcluster and the pod simulator; the reporters inherit it
    async with DevStack(options) as stack:
        exe = Path(sys.executable).parent / "kubetrain"
        cmd = [
            str(exe), "run", "--kubeconfig", stack.cluster.kubeconfig_path, "--no-leader-elect",
            "--metrics-port", str(metrics_port), "--log-level", "warning", "--no-training-policies",
            "--cert-dir", str(cert_dir), "--webhook-host", "127.0.0.1", "--webhook-port", str(webhook_port),
            "--status-server-port", str(status_port), "--status-server-url", f"https://127.0.0.1:{status_port}",
            "--qps", "0", "--webhook-workers", str(args.webhook_workers),
        ]  # fmt: skip
        if args.status_server_process:
            cmd.append("--status-server-process")
        operator = await asyncio.create_subprocess_exec(
            *cmd,
            stdout=subprocess.DEVNULL,
            preexec_fn=(lambda: os.sched_setaffinity(0, op_cpus)) if op_cpus else None,
        )
        child: int | None = None
        try:
            ns = "bench"
            await stack.kube.create(NAMESPACES, {"metadata": {"name": ns}})
            sem = asyncio.Semaphore(16)

            async def create(i: int) -> None:
                async with sem:
                    await stack.kube.create(
                        job_resource("PyTorchJob"), job(f"j{i}", args.pods_per_job), namespace=ns
                    )

            t0 = time.perf_counter()
            await asyncio.gather(*(create(i) for i in range(args.jobs)))
            total = args.jobs * args.pods_per_job
            sim = stack.simulator
            assert sim is not None
            while (  # noqa: ASYNC110 (polling the in-process cluster)
                sum(
                    1
                    for p in stack.cluster.list_objects("pods", ns)
                    if (p.get("status") or {}).get("phase") == "Running"
                )
                < total
            ):
                await asyncio.sleep(0.5)
            setup = time.perf_counter() - t0
            if args.status_server_process:
                child = status_child(operator.pid)
                assert child is not None, "no status-server child"
                if op_cpus:
                    pin(child, rest)
            pods = []
            for p in stack.cluster.list_objects("pods", ns):
                env = {e["name"]: e.get("value") for e in p["spec"]["containers"][0].get("env", [])}
                files = await sim.files(ns, p["metadata"]["name"])
                pods.append({"url": env[ts.ENV_URL], "token": files[f"{ts.MOUNT_PATH}/{ts.TOKEN_FILE}"]})
            spec_file = work / "reporters.json"
            spec_file.write_text(json.dumps({"ca": ca_file, "pods": pods}))
            webhook = f"https://127.0.0.1:{webhook_port}"
            # the operator settles after the pods started (idle CPU), then admission is probed
            idle_cpu0, idle_main0 = cpu_seconds(operator.pid, child), proc_cpu_seconds(operator.pid)
            await asyncio.sleep(args.duration / 3)
            idle_cpu = (cpu_seconds(operator.pid, child) - idle_cpu0) / (args.duration / 3)
            idle_main = (proc_cpu_seconds(operator.pid) - idle_main0) / (args.duration / 3)
            wh0 = await server_histogram(metrics_port, WEBHOOK_HISTOGRAM)
            before = await probe(args, webhook, ca_file, op_cpus)
            before["server_side"] = summary(
                histogram_diff(await server_histogram(metrics_port, WEBHOOK_HISTOGRAM), wh0)
            )
            client = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--client", str(spec_file), "--duration", str(args.duration),
                "--period", str(args.period), "--warmup", str(args.warmup), stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            assert client.stdout is not None
            await client.stdout.readline()  # the reporters are running: pods start over the warm-up
            await asyncio.sleep(args.warmup + args.period)
            stack.cluster.requests.reset()
            hist0 = await server_histogram(metrics_port)
            rec0 = await server_histogram(metrics_port, RECONCILE_HISTOGRAM)
            load0 = load_average()
            cpu0, main0, t0 = (
                cpu_seconds(operator.pid, child),
                proc_cpu_seconds(operator.pid),
                time.perf_counter(),
            )
            wh0 = await server_histogram(metrics_port, WEBHOOK_HISTOGRAM)
            during = await probe(args, webhook, ca_file, op_cpus)
            during["server_side"] = summary(
                histogram_diff(await server_histogram(metrics_port, WEBHOOK_HISTOGRAM), wh0)
            )
            out, _ = await client.communicate()
            window = time.perf_counter() - t0
            busy_cpu = (cpu_seconds(operator.pid, child) - cpu0) / window
            busy_main = (proc_cpu_seconds(operator.pid) - main0) / window
            load = json.loads(out)
            served = histogram_diff(await server_histogram(metrics_port), hist0)
            reconciles = histogram_diff(await server_histogram(metrics_port, RECONCILE_HISTOGRAM), rec0)
            server_side = summary(served)
            patches = stack.cluster.requests.count("patch", "pytorchjobs/status")
            reviews = stack.cluster.requests.count("create", "tokenreviews")
            api_calls = requests_by_verb(stack.cluster.requests)
            return {
                "pods": total,
                "jobs": args.jobs,
                "setup_seconds": round(setup, 1),
                "load_average": [load0, load_average()],
                "reports": load,
                "reports_server_side": server_side,
                "reports_per_second": round(load["latency"]["n"] / args.duration, 1),
                "status_writes": patches,
                "status_writes_per_job_per_5s": round(patches / args.jobs / (window / 5), 2),
                # the first report of a job is written at once, then at most one per 5 s
                "status_writes_bound": args.jobs * (1 + int(window // 5)),
                "token_reviews": reviews,
                # reconciles while reporting (a progress write wakes none without a deadline)
                "reconciles": int(reconciles["count"]),
                "operator_api_calls": api_calls,
                "operator_cpu_cores_idle": round(idle_cpu, 3),
                "operator_cpu_cores_loaded": round(busy_cpu, 3),
                "operator_cpu_per_1000_pods": round((busy_cpu - idle_cpu) * 1000 / total, 3),
                # of which the operator's own process (the rest: the status-server child)
                "operator_main_process_cpu_per_1000_pods": round((busy_main - idle_main) * 1000 / total, 3),
                "status_server_process": args.status_server_process,
                "pinned": {"operator": sorted(op_cpus), "rest": sorted(rest)} if op_cpus else None,
                "admission_before": before,
                "admission_during": during,
            }
        finally:
            operator.terminate()
            await asyncio.wait_for(operator.wait(), 15)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--pods-per-job", type=int, default=10)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--period", type=float, default=5.0)
    parser.add_argument(
        "--warmup", type=float, default=20.0, help="seconds over which the pods start reporting"
    )
    parser.add_argument("--probes", type=int, default=200)
    # >1: admission also answered by worker processes of their own (`kubetrain run --webhook-workers`)
    parser.add_argument("--webhook-workers", type=int, default=1)
    parser.add_argument(
        "--status-server-process", action="store_true", help="the endpoint in the operator's child process"
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the operator's process and the prober on CPU 0, the rest elsewhere",
    )
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--ca", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(asyncio.run(admission(args.probe, args.ca, args.probes))))
        return 0
    if args.client:
        spec = json.loads(Path(args.client).read_text())
        print("started", flush=True)
        print(json.dumps(asyncio.run(reporters(spec, args.duration, args.period, args.warmup))))
        return 0
    print(json.dumps(asyncio.run(run(args)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
