"""devcluster's Service cluster IP and node port allocation (devcluster/apiserver/verbs/serviceips.py,
kinds/servicealloc.py): N Service creates through the in-process write path (no HTTP), a third of
them NodePort, then N deletes, timed in slices to show whether a write's cost grows with the
Services already there.

    .venv/bin/python benchmarks/bench_service_allocation.py [--services 5000] [--slices 5]

Prints the CPU time of each slice of creates and of all deletes.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.apiserver.request.target import Target


async def run(services: int, slices: int) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        cluster = DevCluster(tls=False, workdir=workdir)
        rt = cluster.registry.by_key("services")
        assert rt is not None
        per = services // slices
        for s in range(slices):
            start = time.process_time()
            for i in range(s * per, (s + 1) * per):
                kind = "NodePort" if i % 3 == 0 else "ClusterIP"
                body = {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": f"s{i}"},
                    "spec": {"type": kind, "ports": [{"port": 80}]},
                }
                await cluster.api.create(Target(rt, "v1", "default"), body)
            spent = time.process_time() - start
            print(
                f"creates {s * per + 1}-{(s + 1) * per}: {spent:.2f} s CPU "
                f"({spent / per * 1e6:.0f} us per create)"
            )
        start = time.process_time()
        for i in range(slices * per):
            cluster.store.remove("services", "default", f"s{i}")
        spent = time.process_time() - start
        print(
            f"{slices * per} store removals: {spent:.2f} s CPU ({spent / (slices * per) * 1e6:.0f} us each)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=5000)
    parser.add_argument("--slices", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(run(args.services, args.slices))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
