"""Shared pieces of the controller benchmarks (not a benchmark itself).

The operator always runs as its own process (`kubetrain controller --no-leader-elect`), so its
peak RSS and CPU are its own; devcluster, the pod simulator and the load generator run in the
benchmark process. Process figures come from /proc (Linux).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/jobs.py, the job builder

import jobs

from kubetrain.dev.stack import DevStackOptions
from kubetrain.devcluster.apiserver.base.types import ResourceType
from kubetrain.devcluster.apiserver.endpoints.server import DevCluster
from kubetrain.devcluster.apiserver.harness.accounting import RequestLog
from kubetrain.devcluster.kubelet.nodeobjects import NODE_CAPACITY
from kubetrain.jobs.defaulting import default_job
from kubetrain.kube.client import KubeClient
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import NAMESPACES, PODS

RESULTS = Path(__file__).resolve().parent / "results"


def nodes_for(pods: int, cpus_each: int = 0, at_least: int = 3) -> int:
    """Simulated nodes enough for `pods` pods of `cpus_each` CPUs (0: no request): devcluster's
    simulated scheduler binds a pod only where it fits (NODE_CAPACITY's pods and CPUs a node)."""
    per_node = int(NODE_CAPACITY["pods"])
    if cpus_each:
        per_node = min(per_node, int(NODE_CAPACITY["cpu"]) // cpus_each)
    return max(at_least, -(-pods // per_node))


OPERATOR_AGENT = "kubetrain/"  # the operator's User-Agent prefix (kubetrain/<version>)
BENCH_AGENT = "kubetrain-bench/1"  # the load generator, so its requests are not counted as the operator's
BENCH_IMAGE = "pytorch/pytorch:2.3"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def best_cpu_seconds(repeat: int, fn: Callable[[Any], object], inputs: Iterable[Any]) -> float:
    """The least process CPU time of `repeat` rounds, each calling `fn` on every one of `inputs`
    (`range(n)`: n calls whose argument `fn` ignores)."""
    rounds = []
    for _ in range(repeat):
        start = time.process_time()
        for x in inputs:
            fn(x)
        rounds.append(time.process_time() - start)
    return min(rounds)


def add_operator_source(parser: argparse.ArgumentParser) -> None:
    """--operator-source: the `Operator.source` of a before/after comparison."""
    parser.add_argument(
        "--operator-source",
        metavar="DIR",
        help="run the operator's kubetrain package from DIR (e.g. `git archive <commit> kubetrain | "
        "tar -x -C DIR` for a before/after comparison)",
    )


def api_server_only() -> DevStackOptions:
    """A devcluster of the emulated API server alone: no webhooks, training policies, controller
    or pod simulator (the benchmark is the only writer)."""
    return DevStackOptions(webhook=False, training_policies=False, controller=False, simulator=False)


def stored_type(cluster: DevCluster, group: str, plural: str) -> ResourceType:
    """The devcluster's registered v1 type of `plural` in `group`, for writes straight to its store."""
    rt = cluster.registry.lookup(group, "v1", plural)
    assert rt is not None, f"{plural}.{group} is not registered"
    return rt


def pytorch_manifest(
    name: str, replicas: dict[str, int], namespace: str | None = None, **options: Any
) -> dict[str, Any]:
    """A PyTorchJob of `replicas` (type -> count) of one pytorch/pytorch:2.3 container each, as
    submitted; `options` are tests/jobs.py `job`'s (restart_policy, resources, container_extra...)."""
    return jobs.job("PyTorchJob", name, replicas, namespace=namespace, image=BENCH_IMAGE, **options)


def pytorch_job(name: str, replicas: int, namespace: str = "default") -> dict[str, Any]:
    """A defaulted PyTorchJob with `replicas` workers (what the mutating webhook would store)."""
    job = pytorch_manifest(name, {"Worker": replicas}, namespace, resources={"requests": {"cpu": "1"}})
    return default_job(job).obj


async def bench_client(kubeconfig: str, qps: float = 0.0, burst: int = 1) -> KubeClient:
    """A client for the load generator: no client-side rate limit, its own User-Agent."""
    client = await KubeClient.connect(kubeconfig, qps=qps, burst=burst, max_connections=64)
    client.user_agent = BENCH_AGENT
    return client


@dataclass
class Operator:
    """`kubetrain controller` as a child process, with its metrics port."""

    kubeconfig: str
    extra: list[str] = field(default_factory=list)
    metrics_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    source: str | None = None  # run the kubetrain package from this directory (before/after runs)
    profile: str | None = None  # write a cProfile of the whole process here (when it stops)

    def start(self) -> None:
        self.metrics_port = free_port()
        exe = Path(sys.executable).parent / "kubetrain"
        program = [str(exe)]
        if self.profile:
            program = [sys.executable, "-m", "cProfile", "-o", self.profile, "-m", "kubetrain.cli"]
        cmd = [
            *program,
            "controller",
            "--kubeconfig",
            self.kubeconfig,
            "--no-leader-elect",
            "--metrics-port",
            str(self.metrics_port),
            "--log-level",
            "warning",
            *self.extra,
        ]
        self.started_at = time.perf_counter()
        env = None
        if self.source:
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, [self.source, os.environ.get("PYTHONPATH")])),
            }
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=sys.stderr, env=env)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    async def get(self, path: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.metrics_port}{path}"
        async with aiohttp.ClientSession() as s, s.get(url) as r:
            return r.status, await r.text()

    async def counters(self, name: str, *labels: str) -> dict[str, float]:
        """The operator's metric samples called `name` from its /metrics, summed by the values
        of `labels` (joined by a space; "" when no label is asked for)."""
        _, text = await self.get("/metrics")
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name:
                    key = " ".join(sample.labels[label] for label in labels)
                    out[key] = out.get(key, 0.0) + sample.value
        return out

    async def wait_ready(self, limit: float = 120.0) -> float:
        """Seconds from process start until /readyz answers 200."""
        deadline = time.perf_counter() + limit
        while time.perf_counter() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"operator exited with {self.proc.returncode}")
            try:
                status, _ = await self.get("/readyz")
                if status == 200:
                    return time.perf_counter() - self.started_at
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
        raise TimeoutError("operator not ready")

    async def metrics(self, name: str = "kubetrain_reconcile_duration_seconds") -> dict[str, Any]:
        _, text = await self.get("/metrics")
        return parse_reconcile_histogram(text, name)

    def rss_peak_mb(self) -> float:
        return proc_status_kb(self.pid, "VmHWM") / 1024

    def rss_mb(self) -> float:
        return proc_status_kb(self.pid, "VmRSS") / 1024

    def cpu_seconds(self) -> float:
        return proc_cpu_seconds(self.pid)

    def tcp_connections(self) -> int:
        return proc_tcp_connections(self.pid)


def proc_status_kb(pid: int, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise KeyError(field_name)


def proc_tcp_connections(pid: int) -> int:
    """How many established TCP connections (IPv4 and IPv6) the process `pid` holds: its socket
    inodes (/proc/PID/fd) matched against /proc/PID/net/tcp{,6} (state 01). Counting before and
    after a phase tells how many connections it opened (none is closed while pods are created)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "01" and fields[9] in inodes:  # st ESTABLISHED, inode
                count += 1
    return count


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def parse_reconcile_histogram(
    text: str, name: str = "kubetrain_reconcile_duration_seconds"
) -> dict[str, Any]:
    """A reconcile histogram (default kubetrain_reconcile_duration_seconds) summed over kinds:
    count, sum, cumulative buckets."""
    buckets: dict[float, float] = {}
    count = total = 0.0
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                le = float(sample.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + sample.value
            elif sample.name.endswith("_count"):
                count += sample.value
            elif sample.name.endswith("_sum"):
                total += sample.value
    return {"count": count, "sum": total, "buckets": sorted(buckets.items())}


def histogram_diff(after: dict[str, Any], before: dict[str, Any] | None) -> dict[str, Any]:
    if before is None:
        return after
    prev = dict(before["buckets"])
    return {
        "count": after["count"] - before["count"],
        "sum": after["sum"] - before["sum"],
        "buckets": [(le, v - prev.get(le, 0.0)) for le, v in after["buckets"]],
    }


def histogram_quantile(hist: dict[str, Any], q: float) -> float | None:
    """Prometheus' histogram_quantile: linear interpolation inside the bucket holding rank q."""
    buckets = hist["buckets"]
    if not buckets or hist["count"] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, cum in buckets:
        if cum >= rank:
            if le == float("inf"):
                return prev_le
            width = cum - prev_count
            frac = (rank - prev_count) / width if width else 0.0
            return prev_le + (le - prev_le) * frac
        prev_le, prev_count = le, cum
    return prev_le


def requests_by_verb(log: RequestLog, agent: str = OPERATOR_AGENT) -> dict[str, int]:
    """'verb resource' -> count of the requests made by `agent` (a User-Agent prefix)."""
    out: dict[str, int] = {}
    for r in log.records:
        if r.user_agent.startswith(agent):
            k = f"{r.verb} {r.resource}"
            out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


def write_result(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def publish(name: str, data: dict[str, Any]) -> Path:
    """A benchmark's last words: `data` written to results/ (`write_result`), printed as one line
    of JSON on stdout, and the file's path on stderr."""
    path = write_result(name, data)
    print(json.dumps(data))
    print(f"written {path}", file=sys.stderr)
    return path


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


async def new_namespace(client: KubeClient, prefix: str) -> str:
    """A fresh namespace `<prefix>-<6 hex digits>`."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


async def namespace_exists(client: KubeClient, namespace: str) -> bool:
    try:
        await client.get(NAMESPACES, None, namespace)
    except ApiError as err:
        if err.is_not_found:
            return False
        raise
    return True


async def pod_added_times(client: KubeClient, namespace: str, count: int, times: list[float]) -> None:
    """Watch `namespace` from now, noting (perf_counter) when each of the first `count` pods appears."""
    _, rv = await client.list_all(PODS, namespace)
    async for kind, _pod in client.watch(PODS, namespace, resource_version=rv, timeout_seconds=600):
        if kind == "ADDED":
            times.append(time.perf_counter())
            if len(times) == count:
                return
