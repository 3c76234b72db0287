"""KubeDL's DAG scheduling for training.kubedl.io jobs (docs/behaviour.md §1, "Serving
`training.kubedl.io/v1alpha1`"): a replica type's pods are created once every pod of the types it
waits for has started (Running, Succeeded or Failed) — not under a gang scheduler, and not for
the same job in another group."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from kubedl_examples import example_job
from planner_builders import Sim, at, job, replica

from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.jobs.kubedldag import dependencies
from kubetrain.operator.plan import PlannerConfig


def kubedl(name: str) -> dict[str, Any]:
    out = example_job(name, "ns")
    out["metadata"].update(uid="uid-dag", generation=1)
    return out


def tfjob(types: dict[str, int]) -> dict[str, Any]:
    """A KubeDL TFJob with these replica types and counts."""
    obj = job("TFJob", {t: replica("TFJob", n) for t, n in types.items()}, name="tf")
    obj["apiVersion"] = "training.kubedl.io/v1alpha1"
    obj["spec"] = {"tfReplicaSpecs": obj["spec"]["tfReplicaSpecs"]}
    return obj


def created(sim: Sim, seconds: float) -> list[str]:
    return sorted(p["metadata"]["name"] for p in sim.step(at(seconds)).create_pods)


def test_pytorch_workers_wait_for_the_master_to_start() -> None:
    sim = Sim(kubedl("pytorch/pytorch_job_mnist_mpi.yaml"))
    master = "pytorch-dist-sendrecv-example-master-0"
    assert created(sim, 0) == [master]
    assert created(sim, 1) == []  # the master is Pending
    sim.set_phase(master, "Running")  # Running, not yet Ready: KubeDL's OnPhase Running
    assert created(sim, 2) == [
        "pytorch-dist-sendrecv-example-worker-0",
        "pytorch-dist-sendrecv-example-worker-1",
    ]


def test_tensorflow_worker_and_chief_wait_for_every_ps() -> None:
    sim = Sim(tfjob({"PS": 2, "Chief": 1, "Worker": 2}))
    assert created(sim, 0) == ["tf-ps-0", "tf-ps-1"]
    sim.set_phase("tf-ps-0", "Running")
    assert created(sim, 1) == []  # tf-ps-1 still Pending
    sim.set_phase("tf-ps-1", "Succeeded", exit_code=0)  # past Running: started (phaseComparator)
    assert created(sim, 2) == ["tf-chief-0", "tf-worker-0", "tf-worker-1"]


def test_a_tfjob_without_ps_starts_every_pod_at_once() -> None:
    sim = Sim(kubedl("tf/tf_job_mnist_distributed_simple.yaml"))
    assert len(created(sim, 0)) == 3


def test_under_a_gang_scheduler_every_pod_is_created_together() -> None:
    sim = Sim(kubedl("pytorch/pytorch_job_mnist_mpi.yaml"), PlannerConfig(gang_scheduler="scheduler-plugins"))
    assert len(created(sim, 0)) == 3


def test_the_same_job_in_kubeflows_group_has_no_dag() -> None:
    obj = kubedl("pytorch/pytorch_job_mnist_mpi.yaml")  # no KubeDL-only field: the same in v1
    obj["apiVersion"] = "kubeflow.org/v1"
    assert len(created(Sim(obj), 0)) == 3


def test_the_dag_of_each_kind_is_kubedls() -> None:
    tf, pytorch, xgboost, mpi = (FRAMEWORKS[k] for k in ("TFJob", "PyTorchJob", "XGBoostJob", "MPIJob"))
    every_tf_type = {"PS", "Worker", "Chief", "Master", "Evaluator"}
    assert dependencies(tf, every_tf_type, gang_scheduling=False) == {
        "Worker": ("PS",),
        "Chief": ("PS",),
        "Master": ("PS",),
    }
    assert dependencies(pytorch, {"Master", "Worker"}, gang_scheduling=False) == {"Worker": ("Master",)}
    assert dependencies(xgboost, {"Master", "Worker"}, gang_scheduling=False) == {"Worker": ("Master",)}
    assert dependencies(mpi, {"Launcher", "Worker"}, gang_scheduling=False) == {"Launcher": ("Worker",)}
    assert dependencies(pytorch, {"Worker"}, gang_scheduling=False) == {}
    assert dependencies(mpi, {"Launcher", "Worker"}, gang_scheduling=True) == {}


def test_a_ps_that_succeeded_and_is_gone_still_counts_as_started() -> None:
    sim = Sim(tfjob({"PS": 1, "Worker": 2}))
    assert created(sim, 0) == ["tf-ps-0"]
    sim.set_phase("tf-ps-0", "Succeeded", exit_code=0)
    sim.step(at(1))  # its index recorded (status.completedIndexes)
    del sim.pods["tf-ps-0"]
    del sim.pods["tf-worker-1"]  # a Worker deleted too: made again, the PS not
    assert created(sim, 2) == ["tf-worker-1"]
