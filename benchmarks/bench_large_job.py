"""One large job: time until all its pods exist, against a bare client creating the same pods.

    .venv/bin/python benchmarks/bench_large_job.py --sizes 250,500,1000 [--qps 150 --burst 300]

    .venv/bin/python benchmarks/bench_large_job.py --sizes 250,500,1000 --kubeconfig ~/.kube/config

For each size, on a fresh devcluster (no pod simulator: only pod creation is measured), or on
the `--kubeconfig` cluster (kubetrain's CRDs installed, no other kubetrain operator running),
each in fresh namespaces deleted afterwards:
1. a bare client (its own process: plain aiohttp, `--concurrency` 16 keep-alive connections,
   bodies serialised in advance, no client-side rate limit) creates the same pods the planner
   builds for the job (labels, an ownerReference to a job of that name in its namespace); its
   time is from its first request to the last pod's ADDED event on a watch of its namespace
   (the time to its last answer is reported too);
2. `kubetrain controller` (its own process, default --qps/--burst unless given) is started and
   once ready one PyTorchJob with that many workers is created; its time is from the create
   request to the last pod's ADDED event on the same kind of watch. It includes what the bare
   client does not do: the job's watch event, planning the pods, the operator's own pod watch
   (which devcluster serves too), expectations, the Service and the status write.
Once they settled (unchanged for 1 s), the Events on the job are counted (a clean create has
only training-operator's per-pod ones, budgeted to 25 writes per job) with the operator's event
writes and its CPU seconds until then. Beside the times: each client's CPU seconds and this
process's (devcluster's, unless `--kubeconfig`) in each phase, and the TCP connections the
operator opened for the job (the bare client opens `--concurrency`); `--profile FILE` profiles
the operator,
`--profile-server FILE` this process per phase (FILE.bare, FILE.operator).
The client-side rate limiter's bound is the time the token bucket needs to admit the job's
writes (N pods + 1 Service + 1 status; the Events, at most 25, are not in it):
max(0, (writes - burst) / qps).
Target: the operator within 1.3x the bare client with the limiter opened
(`--qps 5000 --burst 5000`); at the default 150/300 the limiter's bound dominates.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import ssl
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from _common import (
    Operator,
    add_operator_source,
    api_server_only,
    bench_client,
    load_average,
    namespace_exists,
    new_namespace,
    pod_added_times,
    publish,
    pytorch_job,
)

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import KubeClient
from kubetrain.kube.kubeconfig import load_kubeconfig
from kubetrain.kube.resources import EVENTS, NAMESPACES, PODS, job_resource
from kubetrain.kube.transport import Configuration
from kubetrain.operator.plan import Observed, PlannerConfig, plan

SCRIPT = str(Path(__file__).resolve())


def planned_pods(replicas: int, namespace: str, uid: str) -> list[dict[str, Any]]:
    """The pods the operator creates for the job, exactly (labels, ownerReference to the job of
    `uid`), so that the API server does the same work for the bare client as for the operator."""
    job = pytorch_job("large", replicas, namespace=namespace)
    job["metadata"].update(uid=uid, creationTimestamp="2026-01-01T00:00:00Z")
    every_pod = PlannerConfig(max_pod_creates=replicas + 1)  # the bare client creates them all at once
    p = plan(job, Observed(pods=[], service=None, pod_group=None), datetime.now(UTC), every_pod)
    return p.create_pods


async def bare_client(
    kubeconfig: str, namespace: str, uid: str, replicas: int, concurrency: int
) -> tuple[float, float, float]:
    """A bare client: plain aiohttp, `concurrency` keep-alive connections (each POSTs the next
    pod as soon as its last answer is read), the pod bodies serialised before the clock starts,
    no rate limit, no metrics — the floor any client of this API server can reach. Returns its
    time from the first request to the last answer, its CPU seconds, and when it started
    (`time.perf_counter`: CLOCK_MONOTONIC, the same clock in every process of this machine)."""
    configuration = Configuration()
    await load_kubeconfig(kubeconfig, None, configuration)
    ctx = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        ctx.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    for setting in (await configuration.auth_settings()).values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    url = f"{str(configuration.host).rstrip('/')}/api/v1/namespaces/{namespace}/pods"
    bodies = [orjson.dumps(pod) for pod in planned_pods(replicas, namespace, uid)]
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=ctx)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker() -> None:
            while bodies:
                body = bodies.pop()
                async with session.post(url, data=body) as resp:
                    await resp.read()
                    assert resp.status == 201, resp.status

        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - t0, time.process_time() - c0, t0


async def one_size(replicas: int, args: argparse.Namespace) -> dict[str, Any]:
    if args.kubeconfig:
        return await measure(args.kubeconfig, replicas, args)
    opts = api_server_only()
    async with DevStack(opts) as stack:
        return await measure(stack.cluster.kubeconfig_path, replicas, args)


async def measure(kubeconfig: str, replicas: int, args: argparse.Namespace) -> dict[str, Any]:
    client = await bench_client(kubeconfig)
    bare, job_ns = await new_namespace(client, "bench-bare"), await new_namespace(client, "bench-large")
    try:
        # The same job in the bare client's namespace (no operator runs yet: nothing acts on it),
        # so its pods carry the same ownerReference; the same watch of the namespace is open.
        owner = await client.create(
            job_resource("PyTorchJob"), pytorch_job("large", replicas, namespace=bare), namespace=bare
        )
        seen: list[float] = []
        bare_watch = asyncio.ensure_future(pod_added_times(client, bare, replicas, seen))
        await asyncio.sleep(0.5)  # the watch is open
        cmd = [
            sys.executable,
            SCRIPT,
            "--bare-client",
            kubeconfig,
            "--bare-namespace",
            bare,
            "--bare-uid",
            owner["metadata"]["uid"],
            "--sizes",
            str(replicas),
            "--concurrency",
            str(args.concurrency),
        ]
        # The bare client runs in its own process (while this one may serve it: devcluster).
        server = ServerSide(args.profile_server, "bare")
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        bare_answered_s, bare_cpu, bare_t0 = (float(v) for v in out.decode().strip().splitlines()[-1].split())
        await asyncio.wait_for(bare_watch, args.timeout)
        # Both sides end at their last pod's ADDED event on this process's watch.
        bare_s = seen[-1] - bare_t0
        bare_server_cpu = server.stop()
        assert len((await client.list_all(PODS, bare))[0]) == replicas
        # Gone before the operator starts: it would otherwise reconcile that job too.
        await client.delete(NAMESPACES, None, bare)
        for _ in range(int(args.timeout / 0.2)):
            if not await namespace_exists(client, bare):
                break
            await asyncio.sleep(0.2)

        extra = []
        if args.qps is not None:
            extra += ["--qps", str(args.qps)]
        if args.burst is not None:
            extra += ["--burst", str(args.burst)]
        op = Operator(kubeconfig, extra=extra, source=args.operator_source, profile=args.profile)
        op.start()
        try:
            await op.wait_ready()
            last: list[float] = []
            watcher = asyncio.ensure_future(pod_added_times(client, job_ns, replicas, last))
            await asyncio.sleep(0.5)  # the watch is open
            server = ServerSide(args.profile_server, "operator")
            connections0 = op.tcp_connections()  # its watches (and any idle kept-alive ones)
            t0, cpu0 = time.perf_counter(), op.cpu_seconds()
            await client.create(
                job_resource("PyTorchJob"), pytorch_job("large", replicas, namespace=job_ns), namespace=job_ns
            )
            await asyncio.wait_for(watcher, args.timeout)
            operator_server_cpu = server.stop()
            operator_s = last[-1] - t0
            operator_cpu = op.cpu_seconds() - cpu0
            operator_connections = op.tcp_connections() - connections0
            first_pod_s = last[0] - t0
            requests = await op.counters("kubetrain_api_requests_total", "verb", "code")
            writes = int(requests.get("create 201", 0.0))
            # The job's Events are written in the background: wait until they settle, then
            # count them and the operator's CPU until then.
            events, settled = await settled_events(client, job_ns)
            requests = await op.counters("kubetrain_api_requests_total", "verb", "code")
            event_writes = (
                int(requests.get("create 201", 0.0)) - (replicas + 1) + int(requests.get("patch 200", 0.0))
            )
            operator_cpu_settled = op.cpu_seconds() - cpu0
        finally:
            op.stop()
    finally:
        for ns in (bare, job_ns):
            if await namespace_exists(client, ns):
                await client.delete(NAMESPACES, None, ns)
        await client.close()
    qps = args.qps if args.qps is not None else 150.0
    burst = args.burst if args.burst is not None else 300
    job_writes = replicas + 2  # pods, the Service, the first status write
    bound = max(0.0, (job_writes - burst) / qps) if qps > 0 else 0.0
    return {
        "replicas": replicas,
        "bare_client_s": round(bare_s, 2),
        "bare_client_last_answer_s": round(bare_answered_s, 2),
        "bare_client_concurrency": args.concurrency,
        "operator_s": round(operator_s, 2),
        "operator_first_pod_s": round(first_pod_s, 3),
        "ratio": round(operator_s / bare_s, 2),
        # CPU seconds each client spent (load on the machine changes it less than the times)
        "bare_client_cpu_s": round(bare_cpu, 2),
        "operator_cpu_s": round(operator_cpu, 2),
        # CPU seconds of this process (devcluster, unless --kubeconfig, and the pod watch timing
        # both clients) while each client created its pods
        "bare_client_server_cpu_s": round(bare_server_cpu, 2),
        "operator_server_cpu_s": round(operator_server_cpu, 2),
        "rate_limit_bound_s": round(bound, 2),
        "qps": qps,
        "burst": burst,
        "operator_creates": writes,  # its pods, the Service, the Events written by then
        # Events on the job once they settled (SuccessfulCreatePod, …, budgeted to 25 writes per
        # job), the operator's event writes (creates and count bumps) and its CPU until then
        "operator_events": events,
        "operator_event_writes": event_writes,
        "operator_cpu_settled_s": round(operator_cpu_settled, 2),
        "events_settled_s": round(settled, 2),
        # TCP connections the operator opened for the job (each a TLS handshake on both sides;
        # the bare client opens `bare_client_concurrency`); on a shared network namespace
        # (`--kubeconfig`) this counts connections to any peer
        "operator_connections_opened": operator_connections,
    }


async def settled_events(
    client: KubeClient, namespace: str, quiet: float = 1.0, limit: float = 30.0
) -> tuple[int, float]:
    """The number of Events in `namespace` once it stayed the same (with the same counts) for
    `quiet` seconds, and the seconds until then."""
    t0 = time.perf_counter()
    last: list[tuple[str, int]] | None = None
    stable_since = t0
    while time.perf_counter() - t0 < limit:
        page = await client.list(EVENTS, namespace)
        now = sorted((e["metadata"]["name"], int(e.get("count") or 1)) for e in page["items"])
        if now != last:
            last, stable_since = now, time.perf_counter()
        elif time.perf_counter() - stable_since >= quiet:
            break
        await asyncio.sleep(0.1)
    return len(last or []), stable_since - t0


class ServerSide:
    """This process's CPU seconds (devcluster when it serves, and the pod watch) from now until
    `stop`, and with `profile`, a cProfile of it written to `<profile>.<phase>`."""

    def __init__(self, profile: str | None, phase: str) -> None:
        self.path = f"{profile}.{phase}" if profile else None
        self.profiler = cProfile.Profile() if profile else None
        self.cpu0 = time.process_time()
        if self.profiler is not None:
            self.profiler.enable()

    def stop(self) -> float:
        cpu = time.process_time() - self.cpu0
        if self.profiler is not None and self.path is not None:
            self.profiler.disable()
            self.profiler.dump_stats(self.path)
        return cpu


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    for n in sizes:
        r = await one_size(n, args)
        results.append(r)
        print(
            f"large job {n} replicas: operator {r['operator_s']} s (CPU {r['operator_cpu_s']} s) vs bare "
            f"client {r['bare_client_s']} s (CPU {r['bare_client_cpu_s']} s); server CPU "
            f"{r['operator_server_cpu_s']} s vs {r['bare_client_server_cpu_s']} s; "
            f"connections opened {r['operator_connections_opened']} vs {r['bare_client_concurrency']}; "
            f"events {r['operator_events']} ({r['operator_event_writes']} writes, operator CPU "
            f"{r['operator_cpu_settled_s']} s until settled) "
            f"(ratio {r['ratio']}, target <= 1.3 with the limiter opened; "
            f"rate-limit bound {r['rate_limit_bound_s']} s at "
            f"qps {r['qps']} burst {r['burst']})"
        )
    return {"benchmark": "large_job", "load_average_1m": load_average(), "sizes": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="250,500,1000")
    parser.add_argument("--concurrency", type=int, default=16, help="bare client requests in flight")
    parser.add_argument("--qps", type=float, default=None, help="operator --qps (default: its own)")
    parser.add_argument("--burst", type=int, default=None, help="operator --burst (default: its own)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--kubeconfig", help="run against this cluster instead of a fresh devcluster")
    add_operator_source(parser)
    parser.add_argument(
        "--profile", metavar="FILE", help="write a cProfile of the operator process to FILE (pstats)"
    )
    parser.add_argument(
        "--profile-server",
        metavar="FILE",
        help="write a cProfile of this process (devcluster) per phase to FILE.bare and FILE.operator",
    )
    parser.add_argument("--bare-client", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--bare-namespace", default="bare", help=argparse.SUPPRESS)
    parser.add_argument("--bare-uid", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_client:
        wall, cpu, started = asyncio.run(
            bare_client(
                args.bare_client, args.bare_namespace, args.bare_uid, int(args.sizes), args.concurrency
            )
        )
        print(wall, cpu, started)
        return 0
    res = asyncio.run(run(args))
    publish("large_job", res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
