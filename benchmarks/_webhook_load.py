"""The load side of the webhook benchmarks (not a benchmark itself): the webhook server as a
child process, keep-alive TLS clients in their own pinned processes sending one AdmissionReview
back to back, and the CPU accounting of the measured window (clients, server, the machine's
busy/idle/steal per CPU). Used by bench_webhook.py and bench_webhook_kopf.py.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import ssl
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
from _common import proc_cpu_seconds


def serve(
    cert_dir: str,
    port_queue: Any,
    cpu: int | None,
    port: int = 0,
    reuse_port: bool = False,
    gc_asks: Any = None,
    gc_answers: Any = None,
) -> None:
    """The webhook server, with the garbage-collector set-up `kubetrain webhook` has
    (kubetrain.commands._process.configure_gc: the freeze policy `KUBETRAIN_GC_FREEZE` asks
    for, so `KUBETRAIN_GC_FREEZE=off` measures a server without it). With `gc_asks` and
    `gc_answers` (queues), each item put on `gc_asks` is answered with the collections since
    the previous one (`_gcpauses.OwnPauses.summary`), so the benchmark can report them per job."""
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})
    from _gcpauses import OwnPauses

    from kubetrain.webhook.server import WebhookServer

    pauses = OwnPauses()  # after the imports, as in the command: they are frozen at start
    pauses.start()
    if gc_asks is not None and gc_answers is not None:

        def answer_asks() -> None:
            while True:
                gc_asks.get()
                gc_answers.put(pauses.summary())
                pauses.reset()

        threading.Thread(target=answer_asks, name="gc-pauses", daemon=True).start()

    async def main() -> None:
        server = WebhookServer(cert_dir=cert_dir, host="127.0.0.1", port=port, reuse_port=reuse_port)
        await server.start()
        port_queue.put(server.port)
        await asyncio.Event().wait()

    asyncio.run(main())


def cpu_jiffies() -> dict[str, list[int]]:
    """Per-CPU counters from /proc/stat: "cpu0" -> [user, nice, system, idle, iowait, irq,
    softirq, steal] (empty where /proc/stat is missing)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        parts = line.split()
        if parts and parts[0].startswith("cpu") and parts[0] != "cpu":
            out[parts[0]] = [int(x) for x in parts[1:9]]
    return out


def cpu_breakdown(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    """Share of each CPU's time between two `cpu_jiffies()` samples that was busy (user, nice,
    system, irq, softirq), idle (idle, iowait) or stolen by the hypervisor (steal)."""
    out = {}
    for cpu, b in before.items():
        d = [x - y for x, y in zip(after.get(cpu, b), b, strict=True)]
        total = sum(d) or 1
        out[cpu] = {
            "busy": round((d[0] + d[1] + d[2] + d[5] + d[6]) / total, 3),
            "idle": round((d[3] + d[4]) / total, 3),
            "steal": round(d[7] / total, 3),
        }
    return out


def client_cpu_set(server_cpu: int | None) -> set[int] | None:
    """The CPUs the client processes may use: every CPU this process may use except the server's
    (None: no pinning — the server is not pinned, or there is no other CPU)."""
    if server_cpu is None or not hasattr(os, "sched_getaffinity"):
        return None
    others = os.sched_getaffinity(0) - {server_cpu}
    return others or None


async def drive(
    url: str, ca_pem: str, body: bytes, clients: int, seconds: float, on_start: Any = None
) -> dict[str, Any]:
    """`clients` keep-alive TLS connections sending `body` back to back for `seconds`.

    Every connection first sends one request that is not measured (TLS handshake, connection
    set-up); then `on_start()` (a cross-process barrier when there are several client
    processes) and the measured window. Returns the raw latencies, the error count, the
    window's wall time and this process's CPU time (`time.process_time`) over the window."""
    ctx = ssl.create_default_context(cadata=ca_pem)
    headers = {"Content-Type": "application/json"}
    sessions = [
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=1)) for _ in range(clients)
    ]
    latencies: list[float] = []
    errors = 0
    try:

        async def warm(s: aiohttp.ClientSession) -> None:
            async with s.post(url, data=body, headers=headers) as r:
                await r.read()

        await asyncio.gather(*(warm(s) for s in sessions))
        if on_start is not None:
            on_start()
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        deadline = t0 + seconds

        async def client(s: aiohttp.ClientSession) -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                t = time.perf_counter()
                async with s.post(url, data=body, headers=headers) as r:
                    await r.read()
                    if r.status != 200:
                        errors += 1
                latencies.append(time.perf_counter() - t)

        await asyncio.gather(*(client(s) for s in sessions))
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
    finally:
        await asyncio.gather(*(s.close() for s in sessions))
    return {"latencies": latencies, "errors": errors, "wall": wall, "cpu": cpu}


def client_process(
    url: str,
    ca_pem: str,
    body: bytes,
    clients: int,
    seconds: float,
    cpus: set[int] | None,
    barrier: Any,
    out: Any,
) -> None:
    """One client process (child): pinned to `cpus`, runs `drive`, puts its result on `out`."""
    if cpus is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)
    try:
        res = asyncio.run(drive(url, ca_pem, body, clients, seconds, on_start=barrier.wait))
    except BaseException as e:  # reported to the parent, which raises
        barrier.abort()
        out.put({"error": repr(e)})
        raise
    out.put(res)


def measure(
    url: str,
    ca_pem: str,
    body: bytes,
    *,
    clients: int,
    seconds: float,
    client_processes: int = 1,
    client_cpus: set[int] | None = None,
    server_pid: int | None = None,
) -> dict[str, Any]:
    """Run `clients` connections split over `client_processes` child processes (pinned to
    `client_cpus`), all starting their measured window together; merge the latencies.

    CPU utilisation is CPU seconds over the measured window's wall time (1.0 = one core busy):
    `client_cpu` sums the client processes (`client_cpu_per_process` lists each), `server_cpu`
    is the server process's utime + stime from /proc/<pid>/stat (all its threads).
    `machine_cpus` splits each CPU's time over the window into busy / idle / steal (time the
    hypervisor gave to another guest, which no process's CPU time includes); `other_cpu` is
    the busy time (in cores) that was neither the clients' nor the server's."""
    mp = multiprocessing.get_context("spawn")
    n = max(1, min(client_processes, clients))
    shares = [clients // n + (1 if i < clients % n else 0) for i in range(n)]
    barrier = mp.Barrier(n + 1)
    out = mp.Queue()
    procs = [
        mp.Process(
            target=client_process,
            args=(url, ca_pem, body, share, seconds, client_cpus, barrier, out),
            daemon=True,
        )
        for share in shares
    ]
    for p in procs:
        p.start()
    try:
        barrier.wait(timeout=120)
        server0 = proc_cpu_seconds(server_pid) if server_pid else None
        machine0 = cpu_jiffies()
        parts = [out.get(timeout=seconds + 120) for _ in procs]
        machine1 = cpu_jiffies()
        server1 = proc_cpu_seconds(server_pid) if server_pid else None
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.terminate()
    failed = [p["error"] for p in parts if "error" in p]
    if failed:
        raise RuntimeError(f"client process failed: {failed[0]}")
    latencies = sorted(x for p in parts for x in p["latencies"])
    wall = max(p["wall"] for p in parts)
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [latencies[0]] * 99
    res: dict[str, Any] = {
        "requests": len(latencies),
        "errors": sum(p["errors"] for p in parts),
        "seconds": round(wall, 2),
        "reviews_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(q[49] * 1000, 2),
        "p99_ms": round(q[98] * 1000, 2),
        # Beyond p99: one stall of the server (a full garbage collection) delays every
        # connection's request at once, i.e. `clients` samples, ~0.4-1 % of a 5-10 s window.
        "p99_9_ms": round(latencies[min(len(latencies) - 1, int(0.999 * len(latencies)))] * 1000, 2),
        "max_ms": round(latencies[-1] * 1000, 2),
        "over_50ms": sum(1 for x in latencies if x > 0.05),
        "client_processes": n,
        "client_cpus": sorted(client_cpus) if client_cpus else None,
        "client_cpu": round(sum(p["cpu"] for p in parts) / wall, 3),
        "client_cpu_per_process": [round(p["cpu"] / p["wall"], 3) for p in parts],
    }
    res["machine_cpus"] = cpu_breakdown(machine0, machine1)
    if server0 is not None and server1 is not None:
        res["server_cpu"] = round((server1 - server0) / wall, 3)
        res["server_cpu_ms_per_review"] = round((server1 - server0) * 1000 / len(latencies), 3)
        # busy CPU time on the machine that is neither the clients' nor the server's
        # (other processes, the kernel's softirq work): > ~0.1 means the run was contended
        busy = sum(v["busy"] for v in res["machine_cpus"].values())
        res["other_cpu"] = round(max(0.0, busy - res["client_cpu"] - res["server_cpu"]), 3)
    return res


def cpu_summary(res: dict[str, Any]) -> str:
    parts = [f"client CPU {res['client_cpu']:.0%} ({res['client_processes']} proc)"]
    if "server_cpu" in res:
        parts += [f"server CPU {res['server_cpu']:.0%}", f"other {res['other_cpu']:.0%}"]
    steal = "/".join(f"{v['steal']:.0%}" for v in res.get("machine_cpus", {}).values())
    if steal:
        parts.append(f"steal {steal}")
    return ", ".join(parts)


def measure_review(
    url: str,
    ca_pem: str,
    body: bytes,
    args: Any,
    client_cpus: set[int] | None,
    server_pid: int | None,
) -> dict[str, Any]:
    """`measure` with the load flags both webhook benchmarks take (--clients, --seconds,
    --client-processes), the result carrying the request body's size."""
    res = measure(
        url,
        ca_pem,
        body,
        clients=args.clients,
        seconds=args.seconds,
        client_processes=args.client_processes,
        client_cpus=client_cpus,
        server_pid=server_pid,
    )
    res["body_bytes"] = len(body)
    return res
