"""The planner's cost for an MPIJob against a PyTorchJob of the same size (steady state: every pod
Running, the hostfile ConfigMap current, so a reconcile writes nothing).

    .venv/bin/python benchmarks/bench_plan_mpi.py [--sizes 100,1000] [--repeat 50]

An MPIJob's reconcile also builds its ConfigMap (hostfile, discover_hosts.sh over the Running
workers) to compare with the observed one; this prints the time of one `plan()` for both kinds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from planner_builders import Sim, at, job, replica

LEADER = {"PyTorchJob": "Master", "MPIJob": "Launcher"}


def steady_plan_ms(kind: str, workers: int, repeat: int) -> float:
    sim = Sim(job(kind, {LEADER[kind]: replica(kind, 1), "Worker": replica(kind, workers)}, name="big"))
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.step(at(2))
    start = time.perf_counter()
    for _ in range(repeat):
        p = sim.plan(at(3))
    assert p.status is None and not p.update_children and not p.create_pods
    return (time.perf_counter() - start) / repeat * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        for kind in ("PyTorchJob", "MPIJob"):
            print(f"{kind:11s} {n:5d} workers: {steady_plan_ms(kind, n, args.repeat):6.2f} ms per plan()")


if __name__ == "__main__":
    main()
