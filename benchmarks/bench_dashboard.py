"""The dashboard at scale against devcluster: the list page over 10,000 jobs, and the job page of a
1,000-pod job rendered in headless Chromium.

    .venv/bin/python benchmarks/bench_dashboard.py --jobs 10000
    .venv/bin/python benchmarks/bench_dashboard.py --jobs 2000 --pods-per-job 4
    .venv/bin/python benchmarks/bench_dashboard.py --pods 1000

devcluster runs in this process and is filled directly (no HTTP, no webhooks or controller); the
dashboard runs as its own process (`kubetrain dashboard --auth local`), so its RSS is its own.

List mode: `--jobs` PyTorchJobs over 20 namespaces in mixed states. After the dashboard lists them
all: each query below `--repeat` times; the server time is the dashboard's `Server-Timing`
header (handler start to response), the client time the whole request on loopback. With
`--pods-per-job N` every job also has N pods (a Master and Workers): Running and ready, except
one pod of every 7th job in CrashLoopBackOff, of every 11th Pending unschedulable and of every
13th in ImagePullBackOff — what the list's pod summaries, `sort=pods` and `pods=not-working`
read — and the dashboard must have seen them all before the queries.

Gantt mode: one PyTorchJob with `--pods` Worker pods (every third with an in-place restart in
its lastState, every tenth Failed), stored Running/Failed. Chromium (Debian's) loads the job page
`--repeat` times; measured: the server time, in the browser the time from the first response
byte to the second animation frame after the load event (HTML parsed, SVG laid out and painted),
and the renderer main thread's busy time for the page (DevTools `TaskDuration`: CPU spent parsing,
styling, laying out and painting — what the page costs, less sensitive to a loaded machine).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from _common import api_server_only, free_port, load_average, pytorch_manifest, stored_type, write_result

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.apiserver.verbs.core import Target

STATES = ("Running", "Succeeded", "Failed", "Created", "Restarting")


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def job_body(name: str, namespace: str, workers: int = 2) -> dict[str, Any]:
    resources = {"requests": {"cpu": "1"}}
    return pytorch_manifest(name, {"Master": 1, "Worker": workers}, namespace, resources=resources)


def job_status(i: int, now: datetime) -> dict[str, Any]:
    state = STATES[i % len(STATES)]
    conditions = [
        {"type": "Created", "status": "True", "reason": "JobCreated", "lastTransitionTime": stamp(now)}
    ]
    if state != "Created":
        conditions.append(
            {"type": state, "status": "True", "reason": f"Job{state}", "lastTransitionTime": stamp(now)}
        )
    return {
        "conditions": conditions,
        "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 2, "restarts": i % 3}},
    }


class Dashboard:
    def __init__(self, kubeconfig: str) -> None:
        self.port = free_port()
        exe = Path(sys.executable).parent / "kubetrain"
        cmd = [
            str(exe),
            "dashboard",
            "--kubeconfig",
            kubeconfig,
            "--auth",
            "local",
            "--port",
            str(self.port),
            "--log-level",
            "warning",
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=sys.stderr)
        self.url = f"http://127.0.0.1:{self.port}"

    def rss_mb(self) -> dict[str, float]:
        fields = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = round(int(value.split()[0]) / 1024, 1)
        return fields

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


async def get(session: aiohttp.ClientSession, url: str) -> tuple[float, float, str]:
    started = time.perf_counter()
    async with session.get(url, headers={"Accept": "text/html"}) as resp:
        text = await resp.text()
        assert resp.status == 200, (resp.status, text[:300])
        server = float(resp.headers["Server-Timing"].split("dur=")[1])
    return server, (time.perf_counter() - started) * 1000, text


async def wait_listed(dash: Dashboard, want: int, limit: float) -> float:
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        while time.perf_counter() - started < limit:
            try:
                _, _, text = await get(session, dash.url + "/?per_page=10")
                if f"· {want} job" in text:
                    return time.perf_counter() - started
            except (aiohttp.ClientError, AssertionError, KeyError):
                pass
            await asyncio.sleep(0.2)
    raise TimeoutError(f"the dashboard did not list {want} jobs within {limit} s")


def quantiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 1),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 1),
        "max": round(ordered[-1], 1),
    }


def list_pod_status(i: int, k: int, now: datetime) -> dict[str, Any]:
    """Pod `k` of job `i`: Running and ready, but pod 0 of every 7th job crash-loops, of every
    11th is unschedulable and of every 13th cannot pull its image."""
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(now)}
    running = {
        "name": "pytorch",
        "ready": True,
        "restartCount": 0,
        "state": {"running": {"startedAt": stamp(now)}},
    }
    if k == 0 and i % 7 == 3:
        back_off = {
            "reason": "CrashLoopBackOff",
            "message": "back-off 40s restarting failed container=pytorch",
        }
        crash = {**running, "ready": False, "restartCount": 3, "state": {"waiting": back_off}}
        return {"phase": "Running", "containerStatuses": [crash], "conditions": [scheduled]}
    if k == 0 and i % 11 == 5:
        message = "0/50 nodes are available: 50 Insufficient cpu."
        unscheduled = {**scheduled, "status": "False", "reason": "Unschedulable", "message": message}
        return {"phase": "Pending", "conditions": [unscheduled]}
    if k == 0 and i % 13 == 0:
        pull = {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "registry.invalid/x:1"'}
        waiting = {**running, "ready": False, "state": {"waiting": pull}}
        return {"phase": "Pending", "containerStatuses": [waiting], "conditions": [scheduled]}
    return {"phase": "Running", "containerStatuses": [running], "conditions": [scheduled]}


async def wait_pods_seen(dash: Dashboard, jobs: int, limit: float) -> float:
    """Until the list's pod filter counts every job with a pod not working (the pod informer
    has them all)."""
    want = sum(1 for i in range(jobs) if i % 7 == 3 or i % 11 == 5 or i % 13 == 0)
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        while time.perf_counter() - started < limit:
            _, _, text = await get(session, dash.url + "/?per_page=10&pods=not-working")
            if f"· {want} job" in text:
                return time.perf_counter() - started
            await asyncio.sleep(0.2)
    raise TimeoutError(f"the dashboard did not see {want} jobs with pods not working within {limit} s")


async def list_mode(args: argparse.Namespace) -> dict[str, Any]:
    async with DevStack(api_server_only()) as stack:
        cluster = stack.cluster
        rt = stored_type(cluster, "kubetrain.io", "pytorchjobs")
        ns_rt = stored_type(cluster, "", "namespaces")
        pods_rt = stored_type(cluster, "", "pods")
        now = datetime.now(UTC)
        t_fill = time.perf_counter()
        for n in range(20):
            await cluster.api.create(Target(ns_rt, "v1", None, ""), {"metadata": {"name": f"team-{n:02d}"}})
        workers = args.pods_per_job - 1 if args.pods_per_job else 2
        for i in range(args.jobs):
            ns = f"team-{i % 20:02d}"
            res = await cluster.api.create(Target(rt, "v1", ns, ""), job_body(f"job-{i:05d}", ns, workers))
            cluster.store.update(rt.key, {**res.obj, "status": job_status(i, now)}, None)
            for k in range(args.pods_per_job):
                body = pod_body(res.obj, k - 1, now, "worker") if k else pod_body(res.obj, 0, now, "master")
                pod = (await cluster.api.create(Target(pods_rt, "v1", ns, ""), body)).obj
                cluster.store.update(pods_rt.key, {**pod, "status": list_pod_status(i, k, now)}, None)
        fill_s = time.perf_counter() - t_fill
        dash = Dashboard(cluster.kubeconfig_path)
        try:
            synced_s = await wait_listed(dash, args.jobs, args.timeout)
            queries = {
                "first page (newest 50)": "/",
                "page 100": "/?page=100",
                "one namespace": "/?namespace=team-07",
                "state Failed, by name": "/?state=Failed&sort=name&order=asc",
                "by progress, 500 per page": "/?sort=progress&per_page=500",
            }
            pods_seen_s = None
            if args.pods_per_job:
                pods_seen_s = await wait_pods_seen(dash, args.jobs, args.timeout)
                queries["pods not working first"] = "/?sort=pods"
                queries["only pods not working, 500 per page"] = "/?pods=not-working&per_page=500"
            results: dict[str, Any] = {}
            async with aiohttp.ClientSession() as session:
                for label, path in queries.items():
                    server, client = [], []
                    for _ in range(args.repeat):
                        s, c, _ = await get(session, dash.url + path)
                        server.append(s)
                        client.append(c)
                    results[label] = {"server_ms": quantiles(server), "client_ms": quantiles(client)}
            rss = dash.rss_mb()
        finally:
            dash.stop()
    return {
        "benchmark": "dashboard_list",
        "jobs": args.jobs,
        "pods": args.jobs * args.pods_per_job,
        "fill_s": round(fill_s, 1),
        "listed_after_s": round(synced_s, 1),
        "pods_seen_after_s": None if pods_seen_s is None else round(pods_seen_s, 1),
        "queries": results,
        "dashboard_rss_mb": rss,
        "load_average_1m": load_average(),
    }


def pod_body(job: dict[str, Any], i: int, now: datetime, rtype: str = "worker") -> dict[str, Any]:
    name = job["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{rtype}-{i}",
            "namespace": job["metadata"]["namespace"],
            "labels": {
                "kubetrain.io/job-name": name,
                "kubetrain.io/replica-type": rtype,
                "kubetrain.io/replica-index": str(i),
            },
            "ownerReferences": [
                {
                    "apiVersion": "kubetrain.io/v1",
                    "kind": "PyTorchJob",
                    "name": name,
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.3"}],
            "nodeName": f"node-{i % 50}",
        },
    }


def pod_status(i: int, now: datetime) -> dict[str, Any]:
    start = now - timedelta(seconds=600 - (i % 60))
    cs: dict[str, Any] = {"name": "pytorch", "restartCount": 0, "ready": True}
    if i % 3 == 0:
        cs["restartCount"] = 1
        cs["lastState"] = {
            "terminated": {
                "exitCode": 137,
                "reason": "OOMKilled",
                "startedAt": stamp(start),
                "finishedAt": stamp(start + timedelta(seconds=120)),
            }
        }
        start = start + timedelta(seconds=125)
    phase = "Failed" if i % 10 == 0 else "Running"
    if phase == "Failed":
        cs["state"] = {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": stamp(start),
                "finishedAt": stamp(start + timedelta(seconds=200)),
            }
        }
    else:
        cs["state"] = {"running": {"startedAt": stamp(start)}}
    return {
        "phase": phase,
        "containerStatuses": [cs],
        "startTime": stamp(start),
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "True",
                "lastTransitionTime": stamp(now - timedelta(seconds=610)),
            }
        ],
    }


async def gantt_mode(args: argparse.Namespace) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    async with DevStack(api_server_only()) as stack:
        cluster = stack.cluster
        rt = stored_type(cluster, "kubetrain.io", "pytorchjobs")
        pods_rt = stored_type(cluster, "", "pods")
        now = datetime.now(UTC)
        job = (
            await cluster.api.create(Target(rt, "v1", "default", ""), job_body("big", "default", args.pods))
        ).obj
        cluster.store.update(rt.key, {**job, "status": job_status(0, now)}, None)
        for i in range(args.pods):
            pod = (await cluster.api.create(Target(pods_rt, "v1", "default", ""), pod_body(job, i, now))).obj
            cluster.store.update(pods_rt.key, {**pod, "status": pod_status(i, now)}, None)
        dash = Dashboard(cluster.kubeconfig_path)
        try:
            await wait_listed(dash, 1, args.timeout)
            url = dash.url + "/namespaces/default/pytorchjobs/big"
            server: list[float] = []
            render: list[float] = []
            busy: list[float] = []
            layout: list[float] = []
            style: list[float] = []
            bars = html_bytes = 0
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(
                    executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"]
                )
                for _ in range(args.repeat):
                    # a fresh page each time: its renderer's TaskDuration counts this page alone
                    page = await browser.new_page(viewport={"width": 1400, "height": 900})
                    cdp = await page.context.new_cdp_session(page)
                    await cdp.send("Performance.enable")
                    response = await page.goto(url, wait_until="load")
                    assert response is not None and response.status == 200
                    server.append(float((await response.all_headers())["server-timing"].split("dur=")[1]))
                    ms = await page.evaluate(
                        """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
                            const nav = performance.getEntriesByType('navigation')[0];
                            done(performance.now() - nav.responseStart);
                        })))"""
                    )
                    render.append(float(ms))
                    metrics = (await cdp.send("Performance.getMetrics"))["metrics"]
                    values = {m["name"]: float(m["value"]) for m in metrics}
                    busy.append(1000 * values["TaskDuration"])
                    layout.append(1000 * values.get("LayoutDuration", 0.0))
                    style.append(1000 * values.get("RecalcStyleDuration", 0.0))
                    bars = await page.evaluate(
                        """() => [...document.querySelectorAll('.gantt text.row')]
                            .reduce((n, row) => n + row.dataset.bars.split(';').length, 0)"""
                    )
                    html_bytes = len(await page.content())
                    await page.close()
                await browser.close()
            rss = dash.rss_mb()
        finally:
            dash.stop()
    return {
        "benchmark": "dashboard_gantt",
        "pods": args.pods,
        "bars": bars,
        "html_bytes": html_bytes,
        "server_ms": quantiles(server),
        "browser_render_ms": quantiles(render),
        "browser_main_thread_ms": quantiles(busy),
        "browser_layout_ms": quantiles(layout),
        "browser_style_ms": quantiles(style),
        "dashboard_rss_mb": rss,
        "load_average_1m": load_average(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--jobs", type=int, help="list mode: this many jobs")
    mode.add_argument("--pods", type=int, help="Gantt mode: one job of this many pods")
    parser.add_argument("--pods-per-job", type=int, default=0, help="list mode: each job's pods")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    result = asyncio.run(list_mode(args) if args.jobs else gantt_mode(args))
    path = write_result(result["benchmark"], result)
    import json

    print(json.dumps(result, indent=2))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
