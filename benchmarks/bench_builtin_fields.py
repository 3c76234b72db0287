"""devcluster's unknown-field check of built-in objects (devcluster/apiserver/kinds/builtinschema.py)
on the pods the operator creates: the planner's pods of one PyTorchJob of N workers.

    .venv/bin/python benchmarks/bench_builtin_fields.py [--replicas 1000] [--repeat 5]

Prints the body size, the one-off cost of loading the schema, and the CPU time of walking all
N bodies (best and median of `--repeat`), the schema already loaded.
"""

from __future__ import annotations

import argparse
import copy
import time

import orjson
from bench_large_job import planned_pods

from kubetrain.devcluster.apiserver.kinds import builtinschema


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    pods = planned_pods(args.replicas, "ns", "00000000-0000-0000-0000-000000000001")
    start = time.process_time()
    assert builtinschema.unknown_fields("", "v1", "Pod", copy.deepcopy(pods[0])) == []
    load = time.process_time() - start
    times = []
    for _ in range(args.repeat):
        bodies = copy.deepcopy(pods)
        start = time.process_time()
        for body in bodies:
            if builtinschema.unknown_fields("", "v1", "Pod", body):
                raise SystemExit(f"the planner's pod has fields the schema does not know: {body}")
        times.append(time.process_time() - start)
    times.sort()
    best, median = times[0], times[len(times) // 2]
    print(
        f"{len(pods)} pods of {len(orjson.dumps(pods[0]))} bytes: schema load and first walk "
        f"{load * 1e3:.1f} ms; walk of all {best * 1e3:.1f} ms best, {median * 1e3:.1f} ms median "
        f"({best / len(pods) * 1e6:.1f} us per pod)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
