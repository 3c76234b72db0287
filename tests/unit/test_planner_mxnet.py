"""An MXJob whose Scheduler and Server have 0 replicas is local training (docs/behaviour.md §3,
§5): mxnet-operator issue 32 ran one Worker this way and saw the job Succeeded while it ran;
training-operator accepts the manifest and runs it as one Worker (`isSingleWorker`). A Scheduler
of 1 with no Servers is a distributed job training-operator accepts too."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from admission import review_of
from planner_builders import Sim, at, env_of, job, replica

from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.webhook.validate import validate


def issue_32(**counts: int) -> dict[str, Any]:
    """The reporter's MXJob: Scheduler and Server at 0 replicas, one Worker (`counts` overrides)."""
    types = {"Scheduler": 0, "Server": 0, "Worker": 1, **counts}
    return job("MXJob", {t: replica("MXJob", n) for t, n in types.items()}, name="mx", namespace="ml")


def errors_of(obj: dict[str, Any]) -> list[str]:
    return [f"{e.path}: {e.message}" for e in validate_job(default_job(obj).obj).errors]


def test_scheduler_and_server_at_zero_replicas_is_a_local_job() -> None:
    assert errors_of(issue_32()) == []
    sim = Sim(default_job(issue_32()).obj)
    first = sim.step(at(0))
    assert [p["metadata"]["name"] for p in first.create_pods] == ["mx-worker-0"]
    assert not sim.is_true("Succeeded")  # nothing has run yet
    env = env_of(sim.pods["mx-worker-0"])
    assert (env["DMLC_PS_ROOT_URI"], env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"]) == ("", "0", "1")
    # As training-operator's genClusterSpec writes it: a type of 0 replicas is an empty list.
    assert json.loads(env["MX_CONFIG"]) == {
        "cluster": {
            "scheduler": [],
            "server": [],
            "worker": [{"url": "mx-worker-0.mx.ml.svc", "port": 9091}],
        },
        "labels": {"scheduler": "", "server": "", "worker": ""},
        "task": {"type": "worker", "index": 0},
    }
    sim.set_phase("mx-worker-0", "Running")
    sim.step(at(1))
    assert sim.is_true("Running") and not sim.is_true("Succeeded")
    sim.set_phase("mx-worker-0", "Succeeded", exit_code=0)
    sim.step(at(2))
    assert sim.is_true("Succeeded")


def test_a_scheduler_or_server_with_replicas_still_makes_the_job_distributed() -> None:
    assert errors_of(issue_32(Server=2)) == [
        "spec.mxReplicaSpecs[Scheduler].replicas: must be 1 "
        "(a distributed MXTrain job (with a Scheduler or Servers) has exactly one Scheduler)"
    ]
    assert errors_of(issue_32(Worker=2)) == [
        "spec.mxReplicaSpecs[Worker].replicas: must be 0 or 1 in a local MXTrain job "
        "(no Scheduler or Server with replicas); add a Scheduler and Servers for distributed training"
    ]


def test_scheduler_without_servers_is_admitted_and_runs_as_training_operator_runs_it() -> None:
    """Scheduler 1, Server 0, two Workers: training-operator admits it (its only replica rule is
    at most one Scheduler) and runs the Scheduler and the Workers with DMLC_NUM_SERVER=0; the
    Scheduler decides success."""
    obj = default_job(issue_32(Scheduler=1, Worker=2)).obj
    assert errors_of(obj) == []
    assert validate(review_of(obj)).allowed  # the validating webhook
    without_server = issue_32(Scheduler=1, Worker=2)
    del without_server["spec"]["mxReplicaSpecs"]["Server"]
    assert errors_of(without_server) == []

    sim = Sim(obj)
    first = sim.step(at(0))
    assert sorted(p["metadata"]["name"] for p in first.create_pods) == [
        "mx-scheduler-0",
        "mx-worker-0",
        "mx-worker-1",
    ]
    scheduler = env_of(sim.pods["mx-scheduler-0"])
    worker = env_of(sim.pods["mx-worker-1"])
    root = (worker["DMLC_PS_ROOT_URI"], worker["DMLC_PS_ROOT_PORT"])
    assert root == (scheduler["DMLC_PS_ROOT_URI"], "9091") and root[0].startswith("mx-scheduler-0")
    assert (worker["DMLC_NUM_SERVER"], worker["DMLC_NUM_WORKER"], worker["DMLC_ROLE"]) == ("0", "2", "worker")
    assert (worker["DMLC_WORKER_ID"], scheduler["DMLC_ROLE"]) == ("1", "scheduler")
    assert "DMLC_WORKER_ID" not in scheduler
    config = json.loads(worker["MX_CONFIG"])
    assert config["cluster"]["server"] == [] and len(config["cluster"]["worker"]) == 2
    assert config["task"] == {"type": "worker", "index": 1}

    for name in ("mx-scheduler-0", "mx-worker-0", "mx-worker-1"):
        sim.set_phase(name, "Running")
    sim.step(at(1))
    assert sim.is_true("Running") and not sim.is_true("Succeeded")
    sim.set_phase("mx-worker-0", "Succeeded", exit_code=0)
    sim.set_phase("mx-worker-1", "Succeeded", exit_code=0)
    sim.step(at(2))
    assert not sim.is_true("Succeeded")  # the Scheduler decides, as in training-operator
    sim.set_phase("mx-scheduler-0", "Succeeded", exit_code=0)
    sim.step(at(3))
    assert sim.is_true("Succeeded")


def test_a_distributed_job_still_needs_one_scheduler_and_workers() -> None:
    assert errors_of(issue_32(Scheduler=1, Worker=0)) == [
        "spec.mxReplicaSpecs[Worker].replicas: must be at least 1 "
        "in a distributed MXTrain job (with a Scheduler or Servers)"
    ]
    assert errors_of(issue_32(Scheduler=2, Worker=2)) == [
        "spec.mxReplicaSpecs[Scheduler].replicas: must be 1 "
        "(a distributed MXTrain job (with a Scheduler or Servers) has exactly one Scheduler)"
    ]
