"""CPU of the simulated scheduler's filters for one attempt (devcluster/kubelet/fit.py with
placement.py): a pod without and with required anti-affinity or a DoNotSchedule topology spread
constraint, against `--nodes` nodes holding `--pods` indexed pods.

    .venv/bin/python benchmarks/bench_scheduler_filters.py --nodes 16 --pods 1000

Prints, per pod shape, the process CPU of `fit.filter_nodes` alone (the node filters and
NodeResourcesFit) and with the filters that read the other pods (their PreFilter included).

    .venv/bin/python benchmarks/bench_scheduler_filters.py --nodes 16 --job 1000

places instead a whole job of `--job` pods of each shape through the gang simulators'
`filters.Cluster.place` (every member through the filters, each placed one counting for the
next), on empty nodes, and prints the process CPU of the whole placement. The shapes: a plain
pod (the filters that read no other pod), the anti-affinity above on every pod (N pods carrying
the same required anti-affinity term), the spread constraint on `kubernetes.io/hostname`
(maxSkew 1 over the job's own pods), and JobSet's exclusive placement (affinity to the job's own
pods and anti-affinity to other jobs' pods, per zone).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from kubetrain.devcluster.gang.filters import Cluster
from kubetrain.devcluster.gang.resources import resources
from kubetrain.devcluster.kubelet import fit
from kubetrain.devcluster.kubelet.nodeobjects import NODE_CAPACITY
from kubetrain.devcluster.kubelet.placement import Placement, PodIndex

Obj = dict[str, Any]
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def pod(i: int, **spec: Any) -> Obj:
    meta = {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}", "labels": {"job": "j", "index": str(i)}}
    return {"metadata": meta, "spec": {"containers": [{"name": "main"}], **spec}}


SHAPES: dict[str, Obj] = {
    "plain": {},
    "anti-affinity": {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"job": "other"}}, "topologyKey": HOST}
                ]
            }
        }
    },
    "topology spread": {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"job": "j"}},
            }
        ]
    },
}


JOB_SHAPES: dict[str, Obj] = {
    "plain": {},
    "anti-affinity": SHAPES["anti-affinity"],
    "hostname spread": {
        "topologySpreadConstraints": [
            {**SHAPES["topology spread"]["topologySpreadConstraints"][0], "topologyKey": HOST}
        ]
    },
    "exclusive zone": {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchExpressions": [{"key": "job", "operator": "In", "values": ["j"]}]
                        },
                        "topologyKey": ZONE,
                    }
                ]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": "job", "operator": "Exists"},
                                {"key": "job", "operator": "NotIn", "values": ["j"]},
                            ]
                        },
                        "topologyKey": ZONE,
                    }
                ]
            },
        }
    },
}


def place_job(nodes: list[Obj], size: int) -> None:
    for shape, spec in JOB_SHAPES.items():
        free = {str(n["metadata"]["name"]): resources(NODE_CAPACITY) for n in nodes}
        cluster = Cluster(nodes, PodIndex(), {}, {}, volcano=True)
        members = [pod(i, **spec) for i in range(size)]
        start = time.process_time()
        placed = cluster.place(members, free)
        took = time.process_time() - start
        outcome = f"placed on {len({n for _, n in placed})} nodes" if isinstance(placed, list) else "no fit"
        print(f"job of {size} pods, {shape}: {took:.2f} s CPU ({len(nodes)} nodes, {outcome})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--job", type=int, default=0, help="place a whole job of this many pods instead")
    args = parser.parse_args()
    nodes = [
        {"metadata": {"name": f"n{i}", "labels": {HOST: f"n{i}", ZONE: f"z{i % 4}"}}}
        for i in range(args.nodes)
    ]
    if args.job:
        place_job(nodes, args.job)
        return
    free = {str(n["metadata"]["name"]): resources(NODE_CAPACITY) for n in nodes}
    index = PodIndex()
    for i in range(args.pods):
        index.put(f"u{i}", f"n{i % args.nodes}", pod(i))
    for shape, spec in SHAPES.items():
        incoming = pod(args.pods, **spec)
        start = time.process_time()
        for _ in range(args.attempts):
            fit.filter_nodes(incoming, nodes, free)
        alone = (time.process_time() - start) / args.attempts
        start = time.process_time()
        for _ in range(args.attempts):
            others = Placement(incoming, nodes, index, {}, fit.node_matches)
            fit.filter_nodes(incoming, nodes, free, others)
        both = (time.process_time() - start) / args.attempts
        print(
            f"{shape}: {alone * 1e6:.0f} us without the pod filters, {both * 1e6:.0f} us with them "
            f"({args.nodes} nodes, {args.pods} pods)"
        )


if __name__ == "__main__":
    main()
