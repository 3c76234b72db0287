"""One big job, then its namespace deleted: the operator's CPU per pod event and its write storms.

    .venv/bin/python benchmarks/bench_big_job.py --sizes 100,1000,5000            # devcluster here
    .venv/bin/python benchmarks/bench_big_job.py --sizes 100,1000,5000 \\
        --kubeconfig ~/.kube/config --simulate-kubelet                        # any cluster

Without `--kubeconfig`, devcluster and the pod simulator run in this process. With it, the
cluster is that one: kubetrain's CRDs must be installed (`kubectl apply -f crds/`), no other
kubetrain operator may run, and pods need kubelets — `--simulate-kubelet` runs the pod
simulator here against that cluster (it registers `--sim-nodes` Nodes and binds the pods
itself; without it the cluster's own scheduler and kubelets run them).

The operator always runs as its own process (`kubetrain controller --no-leader-elect`, default
workers/QPS/burst unless `--operator-args`), so its CPU (utime+stime from /proc — reliable on a
shared machine, unlike wall time) and RSS are its own. For each size, in a fresh namespace:
1. one PyTorchJob with N workers (no resource requests) is created; this process watches the
   namespace's pods and counts their events (ADDED/MODIFIED/DELETED — the operator's pod
   informer receives the same) until every pod and the job are Running;
2. the namespace is deleted and this process waits until it is gone;
   (`--start-seconds S` keeps simulated pods Pending S seconds after binding, so their status
   events come after the create wave, spread out as on a real cluster — on devcluster pods
   otherwise run at once, inside the operator's create reconcile, and their events are
   deduplicated by the work queue while it runs);
3. with `--cycles 2` or more, the namespace is created again with a job of the same name, which
   runs and is deleted with its namespace again (the AlreadyExists case).
Measured per phase: operator CPU, CPU per pod event, reconciles (decisions) made, the operator's
creates by response code (its `kubetrain_api_requests_total`) and its Event writes.
On devcluster the namespace controller is paced (`--namespace-delete-interval`, default 10 ms
per object) so that, as on a busy kube-apiserver, a namespace's pods go one by one while its
job still exists.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
import uuid
from typing import Any

from _common import (
    Operator,
    add_operator_source,
    bench_client,
    load_average,
    namespace_exists,
    nodes_for,
    pytorch_manifest,
    write_result,
)

from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.devcluster import PodSimulator
from kubetrain.devcluster.kubelet.behaviour import START_SECONDS
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import NAMESPACES, PODS, job_resource

JOBS = job_resource("PyTorchJob")


def big_job(name: str, replicas: int, start_seconds: float = 0.0) -> dict[str, Any]:
    """A PyTorchJob of `replicas` workers that request nothing (they fit any cluster); the pod
    simulator keeps each pod Pending `start_seconds` after it is bound (a real kubelet ignores it)."""
    return pytorch_manifest(
        name,
        {"Worker": replicas},
        restart_policy="OnFailure",
        container_extra={"command": ["sleep", "infinity"]},
        template_metadata={"annotations": {START_SECONDS: str(start_seconds)}} if start_seconds else None,
    )


class PodWatch:
    """Pods of one namespace by name -> phase, and how many watch events they caused."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.client, self.namespace = client, namespace
        self.phases: dict[str, str] = {}
        self.events = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        _, rv = await self.client.list_all(PODS, self.namespace)
        while True:
            try:
                async for kind, pod in self.client.watch(
                    PODS, self.namespace, resource_version=rv, allow_bookmarks=True, timeout_seconds=300
                ):
                    rv = pod["metadata"].get("resourceVersion") or rv
                    if kind == "BOOKMARK":
                        continue
                    self.events += 1
                    name = pod["metadata"]["name"]
                    if kind == "DELETED":
                        self.phases.pop(name, None)
                    else:
                        self.phases[name] = str((pod.get("status") or {}).get("phase") or "Pending")
            except ApiError as err:
                if err.status == 410:
                    _, rv = await self.client.list_all(PODS, self.namespace)
                    continue
                raise

    def running(self) -> int:
        return sum(1 for p in self.phases.values() if p == "Running")


async def wait_until(pred: Any, limit: float, what: str) -> float:
    start = time.perf_counter()
    while not await pred():
        if time.perf_counter() - start > limit:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)
    return time.perf_counter() - start


async def operator_counters(op: Operator) -> dict[str, float]:
    """The operator's decisions, and its requests by verb and code, from its /metrics."""
    out = await op.counters("kubetrain_api_requests_total", "verb", "code")
    decisions = await op.counters("kubetrain_reconcile_plan_duration_seconds_count")
    return {"decisions": decisions.get("", 0.0), **out} if decisions else out


def diff(after: dict[str, float], before: dict[str, float]) -> dict[str, int]:
    return {k: int(v - before.get(k, 0.0)) for k, v in sorted(after.items()) if v - before.get(k, 0.0)}


class Phase:
    """Operator CPU and counters over one phase."""

    def __init__(self, op: Operator) -> None:
        self.op = op

    async def __aenter__(self) -> Phase:
        self.cpu0, self.counters0, self.t0 = self.op.cpu_seconds(), await operator_counters(self.op), 0.0
        self.t0 = time.perf_counter()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.cpu = self.op.cpu_seconds() - self.cpu0
        self.seconds = time.perf_counter() - self.t0
        self.counters = diff(await operator_counters(self.op), self.counters0)


async def job_running(client: KubeClient, namespace: str, name: str) -> bool:
    try:
        job = await client.get(JOBS, namespace, name)
    except ApiError:
        return False
    return any(
        c.get("type") == "Running" and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


async def _gone(client: KubeClient, namespace: str) -> bool:
    return not await namespace_exists(client, namespace)


async def one_size(
    client: KubeClient, op: Operator, replicas: int, args: argparse.Namespace
) -> dict[str, Any]:
    namespace = f"bench-big-{replicas}-{uuid.uuid4().hex[:6]}"
    result: dict[str, Any] = {"replicas": replicas, "namespace": namespace, "cycles": []}
    for cycle in range(args.cycles):
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        watch = PodWatch(client, namespace)
        watch.start()
        try:
            async with Phase(op) as run:
                await client.create(JOBS, big_job("big", replicas, args.start_seconds), namespace=namespace)

                async def all_running(pods: PodWatch = watch) -> bool:
                    return pods.running() == replicas and await job_running(client, namespace, "big")

                await wait_until(all_running, args.timeout, f"{replicas} pods and the job Running")
            events = watch.events
            async with Phase(op) as gone:
                await client.delete(NAMESPACES, None, namespace)
                await wait_until(lambda: _gone(client, namespace), args.timeout, "namespace gone")
        finally:
            await watch.stop()
        row = {
            "cycle": cycle + 1,
            "to_all_running_s": round(run.seconds, 2),
            "operator_cpu_s_to_all_running": round(run.cpu, 2),
            "pod_events_to_all_running": events,
            "operator_cpu_ms_per_pod_event": round(1000 * run.cpu / max(events, 1), 3),
            "decisions_to_all_running": run.counters.get("decisions", 0),
            "requests_to_all_running": {k: v for k, v in run.counters.items() if k != "decisions"},
            "namespace_deletion_s": round(gone.seconds, 2),
            "operator_cpu_s_namespace_deletion": round(gone.cpu, 2),
            "decisions_namespace_deletion": gone.counters.get("decisions", 0),
            "requests_namespace_deletion": {k: v for k, v in gone.counters.items() if k != "decisions"},
            "rss_peak_mb": round(op.rss_peak_mb(), 1),
        }
        print(
            f"  {replicas} replicas, cycle {cycle + 1}: all Running in {row['to_all_running_s']} s, operator "
            f"CPU {row['operator_cpu_s_to_all_running']} s for {events} pod events "
            f"({row['operator_cpu_ms_per_pod_event']} ms each, {row['decisions_to_all_running']} decisions); "
            f"namespace deletion {row['namespace_deletion_s']} s, "
            f"CPU {row['operator_cpu_s_namespace_deletion']} s, "
            f"requests {row['requests_namespace_deletion']}",
            file=sys.stderr,
            flush=True,
        )
        result["cycles"].append(row)
    return result


async def measure(kubeconfig: str, args: argparse.Namespace, stack: DevStack | None) -> dict[str, Any]:
    client = await bench_client(kubeconfig)
    simulator = None
    if stack is None and args.simulate_kubelet:
        simulator = PodSimulator(kubeconfig, nodes=args.sim_nodes)
        await simulator.start()
    op = Operator(kubeconfig, extra=args.operator_args.split(), source=args.operator_source)
    try:
        op.start()
        await op.wait_ready()
        sizes = []
        for n in (int(s) for s in args.sizes.split(",")):
            sizes.append(await one_size(client, op, n, args))
    finally:
        op.stop()
        if simulator is not None:
            await simulator.stop()
        await client.close()
    return {
        "benchmark": "big_job",
        "cluster": "devcluster" if stack is not None else "kubeconfig",
        "operator_args": args.operator_args,
        "operator_source": args.operator_source,
        "load_average_1m": load_average(),
        "sizes": sizes,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.kubeconfig:
        return await measure(args.kubeconfig, args, None)
    options = DevStackOptions(
        webhook=False,
        training_policies=False,
        controller=False,
        simulator=True,
        simulated_nodes=args.sim_nodes,
        watch_window=200_000,
    )
    async with DevStack(options) as stack:
        stack.cluster.controllers.namespace_delete_interval = args.namespace_delete_interval
        return await measure(stack.cluster.kubeconfig_path, args, stack)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000", help="replicas of the job, comma-separated")
    parser.add_argument("--cycles", type=int, default=2, help="create + delete the namespace this often")
    parser.add_argument("--kubeconfig", help="run against this cluster instead of devcluster")
    parser.add_argument(
        "--simulate-kubelet", action="store_true", help="with --kubeconfig: run the pod simulator here"
    )
    parser.add_argument(
        "--sim-nodes",
        type=int,
        help="nodes the pod simulator registers (default: enough for the largest size, at least 10)",
    )
    parser.add_argument(
        "--namespace-delete-interval",
        type=float,
        default=0.01,
        help="devcluster only: seconds its namespace controller takes per object",
    )
    parser.add_argument(
        "--start-seconds",
        type=float,
        default=0.0,
        help="pod simulator: pods stay Pending this long after binding, so their status events come "
        "after the create wave, spread out as on a real cluster (kubelets ignore it)",
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--operator-args", default="", help="extra `kubetrain controller` flags")
    add_operator_source(parser)
    args = parser.parse_args()
    if args.sim_nodes is None:  # the largest size's pods (the Master too) request nothing
        args.sim_nodes = nodes_for(max(int(s) for s in args.sizes.split(",")) + 1, at_least=10)
    res = asyncio.run(run(args))
    path = write_result("big_job", res)
    print(json.dumps(res))
    print(f"written {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
