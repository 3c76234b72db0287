"""Hostile and huge admission reviews against one webhook process (loopback only, bounded loops).

    .venv/bin/python benchmarks/bench_hostile.py [--only freeze,flood,cache,slow,idle]
        [--review-processes N]

The server (WebhookServer on HTTPS plus a HealthServer on plain HTTP, as `kubetrain webhook`
runs them) is a child process; this process is the attacker and the bystander. Phases:

- freeze: one review whose container has 125,000 unknown fields (~2.3 MB) sent to /validate,
  while /healthz is polled every 20 ms and a small ordinary review is sent every 50 ms; reports
  the hostile review's time and response size, the longest /healthz answer and the longest
  ordinary review during it.
- flood: 4 clients send 5 MB reviews (20,000 env entries) back to back for 10 s while /healthz
  and a small review are timed as above; reports their slowest and p99 times, how the large
  reviews were answered (HTTP status counts), and the RSS of the server process and of its
  review processes afterwards. `--review-processes 0` decides large reviews in the thread pool
  (the behaviour before review processes); the default is what `kubetrain webhook` runs (2).
- cache: RSS of the server idle, then after 150 distinct ~2.8 MB templates were validated.
- slow: 100 connections each send 2.9 MB of a 3 MB body and stall; RSS peak while they hang
  and how many are still open after 15 s.
- idle: 50 connections that send nothing and 50 that send half a request head; how many are
  still open after 15 s.

Run it against another checkout with PYTHONPATH=<checkout> to compare versions (the script only
uses what both versions have). Prints a JSON document and writes it to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from _common import free_port, proc_status_kb, write_result

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.review import request_review


def job(container: dict[str, Any], name: str = "big") -> dict[str, Any]:
    return default_job(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {
                "pytorchReplicaSpecs": {
                    "Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}}
                }
            },
        }
    ).obj


def review_bytes(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(request_review(obj))


async def serve(cert_dir: str, port: int, health_port: int, processes: int) -> None:
    from kubetrain.serving.health import HealthServer
    from kubetrain.webhook.server import WebhookServer

    options: dict[str, Any] = {"review_processes": processes} if processes else {}
    server = WebhookServer(cert_dir=cert_dir, host="127.0.0.1", port=port, **options)
    health = HealthServer(host="127.0.0.1", port=health_port)
    await health.start()
    await server.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


def rss_mb(pid: int) -> float:
    return proc_status_kb(pid, "VmRSS") / 1024


def descendants(pid: int) -> list[int]:
    out: list[int] = []
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return out
    for child in map(int, children):
        out += [child, *descendants(child)]
    return out


def helper_rss(pid: int) -> dict[str, float]:
    """RSS (MB) of the processes the server started, by role: forkserver, its workers and the
    multiprocessing resource tracker."""
    helpers = {}
    for helper in descendants(pid):
        cmdline = Path(f"/proc/{helper}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        parent = int(Path(f"/proc/{helper}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if parent != pid:
            role = "worker"
        else:
            role = "resource_tracker" if "resource_tracker" in cmdline else "forkserver"
        helpers[f"{role} {helper}"] = round(rss_mb(helper), 1)
    return helpers


def p99(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def timed(coro: Any) -> float:
    started = time.perf_counter()
    await coro
    return time.perf_counter() - started


async def start_pollers(
    s: aiohttp.ClientSession,
    url: str,
    health: str,
    small: bytes,
    done: asyncio.Event,
    health_times: list[float],
    small_times: list[float],
) -> list[asyncio.Task[None]]:
    """After three warm-up reviews (connections, schema): /healthz every 20 ms and an ordinary
    small review every 50 ms until `done`, each one's latency noted."""
    headers = {"Content-Type": "application/json"}
    for _ in range(3):
        async with s.post(url + "/validate", data=small, headers=headers) as r:
            await r.read()

    async def poll_health() -> None:
        while not done.is_set():
            started = time.perf_counter()
            async with s.get(health + "/healthz") as r:
                await r.read()
            health_times.append(time.perf_counter() - started)
            await asyncio.sleep(0.02)

    async def ordinary() -> None:
        while not done.is_set():
            started = time.perf_counter()
            async with s.post(url + "/validate", data=small, headers=headers) as r:
                await r.read()
            small_times.append(time.perf_counter() - started)
            await asyncio.sleep(0.05)

    return [asyncio.create_task(poll_health()), asyncio.create_task(ordinary())]


async def phase_freeze(url: str, health: str, ctx: ssl.SSLContext) -> dict[str, Any]:
    hostile = review_bytes(job({"name": "pytorch", "image": "p", **{f"f{i}": i for i in range(125_000)}}))
    small = review_bytes(job({"name": "pytorch", "image": "p"}, "small"))
    headers = {"Content-Type": "application/json"}
    done = asyncio.Event()
    health_times: list[float] = []
    small_times: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=0)) as s:
        pollers = await start_pollers(s, url, health, small, done, health_times, small_times)
        started = time.perf_counter()
        async with s.post(url + "/validate", data=hostile, headers=headers) as r:
            answer = await r.read()
        elapsed = time.perf_counter() - started
        await asyncio.sleep(0.2)
        done.set()
        await asyncio.gather(*pollers)
    return {
        "hostile_review_bytes": len(hostile),
        "hostile_review_seconds": round(elapsed, 3),
        "response_bytes": len(answer),
        "healthz_max_ms": round(max(health_times) * 1000, 1),
        "ordinary_review_max_ms": round(max(small_times) * 1000, 1),
    }


async def phase_flood(url: str, health: str, ctx: ssl.SSLContext, pid: int) -> dict[str, Any]:
    env = [{"name": f"VAR_{j}", "value": "x" * 200} for j in range(20_000)]
    large = review_bytes(job({"name": "pytorch", "image": "p", "env": env}, "flood"))
    small = review_bytes(job({"name": "pytorch", "image": "p"}, "small"))
    headers = {"Content-Type": "application/json"}
    done = asyncio.Event()
    health_times: list[float] = []
    small_times: list[float] = []
    statuses: dict[str, int] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=0)) as s:

        async def attacker() -> None:
            while not done.is_set():
                async with s.post(url + "/validate", data=large, headers=headers) as r:
                    await r.read()
                    statuses[str(r.status)] = statuses.get(str(r.status), 0) + 1
                    if r.status == 429:
                        await asyncio.sleep(float(r.headers.get("Retry-After", "1")))

        tasks = await start_pollers(s, url, health, small, done, health_times, small_times)
        tasks += [asyncio.create_task(attacker()) for _ in range(4)]
        await asyncio.sleep(10)
        done.set()
        await asyncio.gather(*tasks)
    helpers = helper_rss(pid)
    return {
        "large_review_bytes": len(large),
        "large_review_statuses": statuses,
        "healthz_max_ms": round(max(health_times) * 1000, 1),
        "healthz_p99_ms": round(p99(health_times) * 1000, 1),
        "ordinary_review_max_ms": round(max(small_times) * 1000, 1),
        "ordinary_review_p99_ms": round(p99(small_times) * 1000, 1),
        "rss_server_mb": round(rss_mb(pid), 1),
        "rss_helper_processes_mb": helpers,
    }


async def phase_cache(url: str, ctx: ssl.SSLContext, pid: int) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"}
    idle = rss_mb(pid)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=4)) as s:
        for i in range(150):
            env = [{"name": f"V{i}_{j}", "value": "x" * 200} for j in range(12_000)]  # ~2.8 MB
            body = review_bytes(job({"name": "pytorch", "image": "p", "env": env}, f"t{i}"))
            async with s.post(url + "/validate", data=body, headers=headers) as r:
                await r.read()
    return {
        "template_bytes": len(body),
        "rss_idle_mb": round(idle, 1),
        "rss_after_150_mb": round(rss_mb(pid), 1),
    }


async def open_conn(port: int, ctx: ssl.SSLContext) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port, ssl=ctx)


async def still_open(readers: list[asyncio.StreamReader]) -> int:
    """How many of the connections the server has not closed (an answer may be read first)."""

    async def is_open(reader: asyncio.StreamReader) -> bool:
        try:
            async with asyncio.timeout(0.5):
                while await reader.read(65536):
                    pass
        except TimeoutError:
            return True
        except (ConnectionError, ssl.SSLError):
            return False
        return False

    return sum(await asyncio.gather(*(is_open(r) for r in readers)))


async def phase_slow(port: int, ctx: ssl.SSLContext, pid: int) -> dict[str, Any]:
    before = rss_mb(pid)
    head = (
        b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 3000000\r\n\r\n"
    )
    conns = [await open_conn(port, ctx) for _ in range(100)]
    chunk = b" " * 2_900_000
    for _, w in conns:
        w.write(head + chunk)
    await asyncio.gather(*(w.drain() for _, w in conns), return_exceptions=True)
    peak = rss_mb(pid)
    for _ in range(30):
        await asyncio.sleep(0.5)
        peak = max(peak, rss_mb(pid))
    open_after = await still_open([r for r, _ in conns])
    for _, w in conns:
        w.transport.abort()
    return {"rss_before_mb": round(before, 1), "rss_peak_mb": round(peak, 1), "open_after_15s": open_after}


async def phase_idle(port: int, ctx: ssl.SSLContext) -> dict[str, Any]:
    conns = [await open_conn(port, ctx) for _ in range(100)]
    for _, w in conns[50:]:
        w.write(b"POST /validate HTTP/1.1\r\nHost: x\r\n")
    await asyncio.sleep(15)
    open_after = await still_open([r for r, _ in conns])
    for _, w in conns:
        w.transport.abort()
    return {"connections": 100, "open_after_15s": open_after}


async def attack(
    only: set[str], child: subprocess.Popen[str], port: int, health_port: int, ca: str
) -> dict[str, Any]:
    ctx = ssl.create_default_context(cadata=ca)
    url, health = f"https://127.0.0.1:{port}", f"http://127.0.0.1:{health_port}"
    result: dict[str, Any] = {}
    try:
        if "freeze" in only:
            result["freeze"] = await phase_freeze(url, health, ctx)
        if "flood" in only:
            result["flood"] = await phase_flood(url, health, ctx, child.pid)
        if "cache" in only:
            result["cache"] = await phase_cache(url, ctx, child.pid)
        if "slow" in only:
            result["slow"] = await phase_slow(port, ctx, child.pid)
        if "idle" in only:
            result["idle"] = await phase_idle(port, ctx)
    finally:
        child.terminate()
    return result


def main(only: set[str], processes: int) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="bench-hostile-")
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    write_cert_dir(Path(workdir), bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    port, health_port = free_port(), free_port()
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", workdir, str(port), str(health_port), str(processes)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    try:
        return asyncio.run(attack(only, child, port, health_port, bundle.ca.cert_pem.decode()))
    finally:
        child.terminate()
        child.wait(10)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--serve":
        asyncio.run(serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
        sys.exit(0)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="freeze,flood,cache,slow,idle")
    parser.add_argument(
        "--review-processes",
        type=int,
        default=2,
        help="review processes of the server (0: large reviews in the thread pool)",
    )
    parser.add_argument("--label", default="", help="a name for this run in the result file")
    ns = parser.parse_args()
    data = main(set(ns.only.split(",")), ns.review_processes)
    data["review_processes"] = ns.review_processes
    data["kubetrain_path"] = os.path.dirname(
        os.path.dirname(os.path.abspath(sys.modules["kubetrain"].__file__ or ""))
    )
    print(json.dumps(data, indent=2))
    write_result(f"hostile{('-' + ns.label) if ns.label else ''}", data)
