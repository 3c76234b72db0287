"""devcluster's EndpointSlice and Endpoints controllers (devcluster/controllers/endpointslices.py)
under a 1,000-pod job in per-pod service mode: N headless Services (one per pod, selecting job
name, replica type and index), then N pods created with an IP, then each pod made Ready — all
through the in-process store (no HTTP), in slices, with the controllers' work settled after each
slice, to show whether an event's cost grows with the Services and pods already there.

    .venv/bin/python benchmarks/bench_endpointslices.py [--pods 1000] [--slices 5]

Prints the CPU time of each slice (the writes plus the controllers' syncs and their writes).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import tempfile
import time
from typing import Any

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.apiserver.kinds import meta

SELECTOR = ("kubetrain.io/job-name", "kubetrain.io/replica-type", "kubetrain.io/replica-index")


def service(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"big-worker-{i}"},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": dict(zip(SELECTOR, ("big", "worker", str(i)), strict=True)),
            "ports": [{"name": "dist", "port": 23456, "protocol": "TCP"}],
        },
    }


def pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"big-worker-{i}",
            "labels": dict(zip(SELECTOR, ("big", "worker", str(i)), strict=True)),
        },
        "spec": {
            "hostname": f"big-worker-{i}",
            "subdomain": f"big-worker-{i}",
            "nodeName": "node-0",
            "containers": [{"name": "c", "image": "x", "ports": [{"name": "dist", "containerPort": 23456}]}],
        },
        "status": {"phase": "Running", "podIP": f"10.1.{i // 250}.{i % 250 + 1}"},
    }


async def run(pods: int, slices: int) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        cluster = DevCluster(tls=False, workdir=workdir)
        cluster.controllers.start()
        store, api = cluster.store, cluster.api
        per = pods // slices

        def create(key: str, obj: dict[str, Any]) -> None:
            rt = cluster.registry.by_key(key)
            assert rt is not None
            meta.prepare_create(obj, rt, "default", api.clock())
            store.create(key, obj)

        def make_ready(i: int) -> None:
            current = store.get("pods", "default", f"big-worker-{i}")
            assert current is not None
            new = copy.deepcopy(current)
            new["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            store.update("pods", new, current["metadata"]["resourceVersion"])

        phases = (
            ("Service creates", lambda i: create("services", service(i))),
            ("pod creates", lambda i: create("pods", pod(i))),
            ("pods made Ready", make_ready),
        )
        for what, step in phases:
            for s in range(slices):
                start = time.process_time()
                for i in range(s * per, (s + 1) * per):
                    step(i)
                await cluster.controllers.settle()
                spent = time.process_time() - start
                each = spent / per * 1e6
                print(f"{what} {s * per + 1}-{(s + 1) * per}: {spent:.2f} s CPU ({each:.0f} us each)")
        slices_stored = store.count("endpointslices.discovery.k8s.io", "default")
        print(f"{slices_stored} EndpointSlices, {cluster.controllers.endpoints.syncs} syncs")
        await cluster.controllers.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--slices", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(run(args.pods, args.slices))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
