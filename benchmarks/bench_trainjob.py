"""A Kubeflow Trainer v2 TrainJob of N nodes against a kubetrain.io PyTorchJob of N replicas: time
until all pods exist, operator CPU per pod event, and admission decision time.

    .venv/bin/python benchmarks/bench_trainjob.py --nodes 1000 [--qps 150 --burst 300]

On a fresh devcluster (no pod simulator: pod creation is measured) with the job and
trainer.kubeflow.org CRDs and Trainer's default ClusterTrainingRuntimes (torch-distributed), one
`kubetrain controller --api-groups kubetrain.io,trainer.kubeflow.org` process (default
--qps/--burst unless given); in fresh namespaces, one after the other:
1. a PyTorchJob with N workers, 2. a TrainJob with `numNodes: N` — for each the time from the
create request to the last pod's ADDED event on a watch of its namespace, and the operator's CPU
seconds (utime+stime from /proc) over that window divided by the pod events it handled (N pod
ADDED events; no simulator, so no status updates).
Admission: the validating decision (defaulted object in, AdmissionResponse out, as
`kubetrain.webhook.decider` / `kubetrain.webhook.trainer` make it, the TrainJob with its runtime
already read) over `--reviews` CREATE reviews of each, p50/p99.
Targets (issue 24): all pods created within ±20 % of the PyTorchJob's time, CPU per pod event
within 1.5x, admission p99 within 1.5x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from _common import (
    Operator,
    add_operator_source,
    bench_client,
    load_average,
    new_namespace,
    pod_added_times,
    proc_cpu_seconds,
    pytorch_job,
    write_result,
)

from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import TRAINJOBS, job_resource
from kubetrain.kube.transport import DEFAULT_BURST, DEFAULT_QPS
from kubetrain.webhook.decider import Decider
from kubetrain.webhook.review import decode_review
from kubetrain.webhook.trainer import TrainerFacts, validate_trainer

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "kubetrain" / "api" / "trainer" / "runtimes" / "torch_distributed.yaml"


def trainjob(name: str, nodes: int, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "numNodes": nodes,
                "image": "pytorch/pytorch:2.3",
                "resourcesPerNode": {"requests": {"cpu": "1"}},
            },
        },
    }


async def one_job(
    client: Any, op: Operator, ref: Any, job: dict[str, Any], pods: int, limit: float
) -> dict[str, float]:
    ns = job["metadata"]["namespace"]
    times: list[float] = []
    watcher = asyncio.ensure_future(pod_added_times(client, ns, pods, times))
    await asyncio.sleep(0.5)  # the watch is open
    cpu0 = proc_cpu_seconds(op.pid)
    requests0 = await api_requests(op)
    t0 = time.perf_counter()
    await client.create(ref, job, namespace=ns)
    try:
        await asyncio.wait_for(watcher, limit)
    except TimeoutError:
        raise TimeoutError(f"{len(times)} of {pods} pods after {limit} s") from None
    cpu = proc_cpu_seconds(op.pid) - cpu0
    requests = await api_requests(op)
    return {
        "all_pods_s": round(times[-1] - t0, 2),
        "first_pod_s": round(times[0] - t0, 3),
        "operator_cpu_s": round(cpu, 2),
        "cpu_ms_per_pod_event": round(1000 * cpu / pods, 3),
        # The operator's API requests until the last pod existed, by verb (all through its limiter).
        "api_requests": {v: n - requests0.get(v, 0) for v, n in sorted(requests.items())},
    }


async def api_requests(op: Operator) -> dict[str, int]:
    """The operator's API requests so far by verb (kubetrain_api_requests_total)."""
    return {verb: int(n) for verb, n in (await op.counters("kubetrain_api_requests_total", "verb")).items()}


def review(obj: dict[str, Any]) -> bytes:
    group, version = obj["apiVersion"].split("/")
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
            "name": obj["metadata"]["name"],
            "namespace": obj["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "bench"},
            "object": obj,
        },
    }
    return json.dumps(body).encode()


def admission(nodes: int, reviews: int) -> dict[str, Any]:
    runtime = yaml.safe_load(RUNTIME.read_text())
    decider = Decider()
    pj = review(pytorch_job("adm", nodes, namespace="default"))
    tj = review(trainjob("adm", nodes, "default"))
    facts = TrainerFacts(runtime=runtime)

    def time_one(decide: Any) -> float:
        t0 = time.perf_counter()
        decide()
        return time.perf_counter() - t0

    def pytorch() -> None:
        decider.answer(pj, "validate")

    def train() -> None:
        validate_trainer(decode_review(tj), facts)

    out: dict[str, Any] = {"reviews": reviews}
    for label, fn in (("pytorchjob", pytorch), ("trainjob", train)):
        samples = sorted(time_one(fn) for _ in range(reviews))
        out[label] = {
            "p50_ms": round(1000 * statistics.median(samples), 3),
            "p99_ms": round(1000 * samples[int(0.99 * (len(samples) - 1))], 3),
        }
    out["p99_ratio"] = round(out["trainjob"]["p99_ms"] / out["pytorchjob"]["p99_ms"], 2)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    opts = DevStackOptions(
        webhook=False,
        training_policies=False,
        controller=False,
        simulator=False,
        api_groups=("kubetrain.io", "trainer.kubeflow.org"),
    )
    async with DevStack(opts) as stack:
        kubeconfig = stack.cluster.kubeconfig_path
        client = await bench_client(kubeconfig)
        # DevStack installed Trainer's default ClusterTrainingRuntimes (torch-distributed among them)
        extra = [
            "--api-groups",
            "kubetrain.io,trainer.kubeflow.org",
            "--max-replicas-per-job",
            str(max(10000, args.nodes)),
        ]
        if args.qps is not None:
            extra += ["--qps", str(args.qps)]
        if args.burst is not None:
            extra += ["--burst", str(args.burst)]
        op = Operator(kubeconfig, extra=extra, source=args.operator_source)
        op.start()
        try:
            await op.wait_ready()
            pj_ns, tj_ns = await new_namespace(client, "bench-pj"), await new_namespace(client, "bench-tj")
            pj = await one_job(
                client,
                op,
                job_resource("PyTorchJob"),
                pytorch_job("big", args.nodes, pj_ns),
                args.nodes,
                args.timeout,
            )
            # The PyTorchJob emptied the operator's token bucket: refilled before the TrainJob,
            # so both start with a full burst (without this the TrainJob ran ~1.5 s longer).
            qps, burst = args.qps or DEFAULT_QPS, args.burst or DEFAULT_BURST
            await asyncio.sleep(burst / qps + 0.5)
            tj = await one_job(
                client, op, TRAINJOBS, trainjob("big", args.nodes, tj_ns), args.nodes, args.timeout
            )
        finally:
            op.stop()
            await client.close()
    return {
        "benchmark": "trainjob",
        "nodes": args.nodes,
        "load_average_1m": load_average(),
        "pytorchjob": pj,
        "trainjob": tj,
        "all_pods_ratio": round(tj["all_pods_s"] / pj["all_pods_s"], 2),
        "cpu_per_pod_event_ratio": round(tj["cpu_ms_per_pod_event"] / pj["cpu_ms_per_pod_event"], 2),
        "admission": admission(args.nodes, args.reviews),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--reviews", type=int, default=500, help="admission decisions timed per kind")
    parser.add_argument("--qps", type=float, default=None)
    parser.add_argument("--burst", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=180.0)
    add_operator_source(parser)
    args = parser.parse_args()
    res = asyncio.run(run(args))
    path = write_result("trainjob", res)
    print(json.dumps(res, indent=1))
    print(f"written {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
