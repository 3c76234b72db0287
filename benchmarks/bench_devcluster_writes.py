"""devcluster's CPU per pod write (the write path of devcluster/apiserver/verbs/core.py, no HTTP):
N creates of the planner's pods of one PyTorchJob, then N merge patches of a label on each, then
N forced server-side applies of that label (where the server has apply).

    .venv/bin/python benchmarks/bench_devcluster_writes.py [--replicas 1000] [--repeat 3]

Prints the CPU time per create, per patch and per apply (median of `--repeat` fresh clusters).
Run it with PYTHONPATH set to an older checkout's sources to compare with that version.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import tempfile
import time

from bench_large_job import planned_pods

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.apiserver.request.target import Target

MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


async def one_run(replicas: int) -> tuple[float, float, float | None]:
    pods = planned_pods(replicas, "default", "00000000-0000-0000-0000-000000000001")
    async with DevCluster(workdir=tempfile.mkdtemp()) as cluster:
        api = cluster.api
        rt = api.registry.by_key("pods")
        assert rt is not None

        def target(name: str, manager: str = "") -> Target:
            t = Target(rt, "v1", "default", name)
            if hasattr(t, "field_manager"):
                t.field_manager = manager
                t.user_agent = "kubetrain/bench"
            return t

        bodies = copy.deepcopy(pods)
        start = time.process_time()
        for body in bodies:
            await api.create(target(""), body)
        create = (time.process_time() - start) / replicas
        start = time.process_time()
        for body in pods:
            name = body["metadata"]["name"]
            await api.patch(target(name), MERGE, {"metadata": {"labels": {"bench": "patched"}}})
        patch = (time.process_time() - start) / replicas
        if not hasattr(target(""), "field_manager"):
            return create, patch, None
        start = time.process_time()
        for body in pods:
            name = body["metadata"]["name"]
            config = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": {"bench": "applied"}},
            }
            t = target(name, "bench")
            t.force = True  # the label is the merge patch's: take it over
            await api.patch(t, APPLY, config)
        applied = (time.process_time() - start) / replicas
        return create, patch, applied


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [asyncio.run(one_run(args.replicas)) for _ in range(args.repeat)]

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    create = median([r[0] for r in runs])
    patch = median([r[1] for r in runs])
    print(f"pods: {args.replicas}, runs: {args.repeat} (median)")
    print(f"create: {create * 1000:.2f} ms CPU per pod")
    print(f"merge patch: {patch * 1000:.2f} ms CPU per pod")
    applies = [r[2] for r in runs if r[2] is not None]
    if applies:
        print(f"server-side apply: {median(applies) * 1000:.2f} ms CPU per pod")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
