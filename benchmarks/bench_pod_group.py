"""The PodGroup a gang job's reconcile builds to compare with the observed one (a running job's
PodGroup follows its schedulingPolicy, operator/podgroupsync.py), for jobs of N replicas.

    .venv/bin/python benchmarks/bench_pod_group.py [--sizes 100,1000,5000] [--repeat 50]

Prints the time of one `build_pod_group` (minMember and minResources over the gang's pods).
"""

from __future__ import annotations

import argparse
import time

from kubetrain.operator.jobchildren import build_pod_group
from kubetrain.operator.prepare import prepare_job

RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}}


def pytorchjob(workers: int) -> dict[str, object]:
    def spec(replicas: int) -> dict[str, object]:
        container = {"name": "pytorch", "image": "example.com/train:1", "resources": RESOURCES}
        return {"replicas": replicas, "template": {"spec": {"containers": [container]}}}

    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "big", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": {"pytorchReplicaSpecs": {"Master": spec(1), "Worker": spec(workers)}},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print("replicas  build_pod_group")
    for size in (int(s) for s in args.sizes.split(",")):
        shape = prepare_job(pytorchjob(size - 1), gang_scheduling=True).shape
        assert shape is not None
        start = time.perf_counter()
        for _ in range(args.repeat):
            group = build_pod_group(shape, "volcano")
        assert group is not None and group["spec"]["minMember"] == size
        print(f"{size:8d}  {(time.perf_counter() - start) / args.repeat * 1000:8.2f} ms")


if __name__ == "__main__":
    main()
