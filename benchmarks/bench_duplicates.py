"""devcluster's duplicate-key check of request bodies (devcluster/apiserver/request/duplicates.py) on the
pods the operator creates: the planner's pods of one PyTorchJob of N workers, as JSON bytes.

    .venv/bin/python benchmarks/bench_duplicates.py [--replicas 1000] [--repeat 5]

Prints the body size and the CPU time (best of `--repeat`) of parsing all N bodies with
`json.loads` (what every write pays anyway) and of `duplicates.find` on them (the extra parse a
write pays when fieldValidation is not Ignore), and of `find` on bodies with one repeated key
(the slower parse that works out the paths).
"""

from __future__ import annotations

import argparse
import json

from _common import best_cpu_seconds
from bench_large_job import planned_pods

from kubetrain.devcluster.apiserver.request import duplicates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    pods = planned_pods(args.replicas, "ns", "00000000-0000-0000-0000-000000000001")
    bodies = [json.dumps(p).encode() for p in pods]
    repeated = [b[:-1] + b', "kind": "Pod"}' for b in bodies]
    if any(duplicates.find(b) is not None for b in bodies):
        raise SystemExit("the planner's pods have a repeated key")
    if any(duplicates.find(b) is None for b in repeated):
        raise SystemExit("a repeated key was not found")
    n = len(bodies)
    size = sum(map(len, bodies)) / n
    loads = best_cpu_seconds(args.repeat, json.loads, bodies)
    find = best_cpu_seconds(args.repeat, duplicates.find, bodies)
    found = best_cpu_seconds(args.repeat, duplicates.find, repeated)
    print(f"{n} pod bodies, {size:.0f} bytes each")
    print(f"json.loads:            {loads * 1000:8.1f} ms  ({loads / n * 1e6:6.1f} us/body)")
    print(f"find, no duplicate:    {find * 1000:8.1f} ms  ({find / n * 1e6:6.1f} us/body)")
    print(f"find, one duplicate:   {found * 1000:8.1f} ms  ({found / n * 1e6:6.1f} us/body)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
