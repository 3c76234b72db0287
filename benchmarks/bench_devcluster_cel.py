"""devcluster's CEL validation of custom resources (devcluster/apiserver/kinds/crds/celrules.py and
celeval.py) on the trainer.kubeflow.org TrainJob CRD kubetrain ships.

    .venv/bin/python benchmarks/bench_devcluster_cel.py [--writes 2000] [--repeat 5]

Prints the CPU time (best of `--repeat`) of compiling the CRD version's rules once, and per write
of a TrainJob: the structural-schema validation every write pays anyway, and the CEL rules'
evaluation on a create (no old object) and on an update (the rules and ratcheting against the
stored object).
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import yaml
from _common import best_cpu_seconds

from kubetrain.devcluster.apiserver.kinds import schema
from kubetrain.devcluster.apiserver.kinds.crds import celeval, celrules

CRD = Path(__file__).resolve().parents[1] / "charts/kubetrain/files/crds/trainer.kubeflow.org_trainjobs.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sch = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 4, "numProcPerNode": 2, "image": "pytorch:latest", "command": ["train"]},
        },
    }
    old = copy.deepcopy(job)
    job["spec"]["trainer"]["numNodes"] = 8
    compiled = celrules.compile_schema(sch)
    if celeval.validate(compiled, job, old) or schema.validate(job, sch):
        raise SystemExit("the benchmark's TrainJob is refused")
    n, r = args.writes, args.repeat
    compile_s = best_cpu_seconds(r, lambda _: celrules.compile_schema(sch), range(20)) / 20
    structural = best_cpu_seconds(r, lambda _: schema.validate(job, sch), range(n))
    create = best_cpu_seconds(r, lambda _: celeval.validate(compiled, job, None), range(n))
    update = best_cpu_seconds(r, lambda _: celeval.validate(compiled, job, old), range(n))
    print(f"rules compiled per CRD version: {compile_s * 1000:6.2f} ms")
    print(f"structural schema validation:   {structural / n * 1e6:6.1f} us/write")
    print(f"CEL rules on create:            {create / n * 1e6:6.1f} us/write")
    print(f"CEL rules on update:            {update / n * 1e6:6.1f} us/write")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
