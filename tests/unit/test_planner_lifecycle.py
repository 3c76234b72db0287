"""plan(): a job's life from creation to Succeeded for each framework, status writes, no-op
reconciles, recreated pods, managedBy, invalid specs and a Service name conflict."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, pod, replica, with_status

from kubetrain.operator.plan import Observed, PlannerConfig, plan
from kubetrain.operator.prepare import JobCache

TF = job(
    "TFJob",
    {"Chief": replica("TFJob", 1), "PS": replica("TFJob", 1), "Worker": replica("TFJob", 2)},
    name="tf",
)
PT = job("PyTorchJob", {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 2)}, name="pt")
MX = job(
    "MXJob",
    {"Scheduler": replica("MXJob", 1), "Server": replica("MXJob", 1), "Worker": replica("MXJob", 2)},
    name="mx",
)


@pytest.mark.parametrize(
    ("obj", "decider", "pods"),
    [
        (TF, "tf-chief-0", ["tf-chief-0", "tf-ps-0", "tf-worker-0", "tf-worker-1"]),
        (PT, "pt-master-0", ["pt-master-0", "pt-worker-0", "pt-worker-1"]),
        (MX, "mx-scheduler-0", ["mx-scheduler-0", "mx-server-0", "mx-worker-0", "mx-worker-1"]),
    ],
)
def test_happy_path_to_succeeded(obj: dict[str, Any], decider: str, pods: list[str]) -> None:
    sim = Sim(obj)
    first = sim.step(at(0))
    assert sorted(sim.created) == sorted(pods)
    assert first.create_service is not None and first.create_service["spec"]["clusterIP"] == "None"
    assert sim.is_true("Created") and sim.job["status"]["startTime"] == "2024-05-01T12:00:00Z"
    assert all(rs["pending"] >= 1 for rs in sim.job["status"]["replicaStatuses"].values())
    assert sim.step(at(1)).status is None  # pods still Pending: nothing new to say

    sim.all_phase("Running")
    sim.step(at(2))
    assert sim.is_true("Running")
    assert sum(rs["active"] for rs in sim.job["status"]["replicaStatuses"].values()) == len(pods)

    # Every other pod keeps running; the decider finishes.
    sim.set_phase(decider, "Succeeded", exit_code=0)
    done = sim.step(at(10))
    assert sim.is_true("Succeeded") and sim.condition("Succeeded")["reason"] == "JobSucceeded"  # type: ignore[index]
    running = sim.condition("Running")
    assert running is not None and running["status"] == "False"
    assert sim.job["status"]["completionTime"] == "2024-05-01T12:00:10Z"
    # cleanPodPolicy defaults to Running: every pod still running is deleted, the Service too.
    assert sorted(done.delete_pods) == sorted(p for p in pods if p != decider)
    assert done.delete_service
    assert [(e.type, e.reason) for e in done.events] == [("Normal", "JobSucceeded")]
    # Nothing changes after Succeeded.
    assert sim.step(at(20)).status is None
    assert sim.status_writes <= 4


def test_unchanged_reconcile_returns_no_status_and_no_actions() -> None:
    sim = Sim(PT)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    again = sim.plan(at(5))
    assert again.status is None and again.create_pods == [] and again.delete_pods == [] and again.events == []


def test_deleted_pod_is_recreated_while_running() -> None:
    sim = Sim(PT)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    del sim.pods["pt-worker-1"]  # kubectl delete pod
    p = sim.step(at(2))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["pt-worker-1"]
    assert p.create_service is None


def test_pods_of_other_owners_are_ignored_and_extra_indices_deleted() -> None:
    stranger = pod(PT, "Worker", 0, owner_uid="someone-else")
    extra = pod(PT, "Worker", 5)
    p = plan(PT, Observed(pods=[stranger, extra]), at(0), PlannerConfig(), cache=JobCache())
    assert "pt-worker-0" in [x["metadata"]["name"] for x in p.create_pods]
    assert p.delete_pods == ["pt-worker-5"]


def test_managed_by_another_controller_is_left_alone() -> None:
    obj = job(
        "PyTorchJob",
        {"Worker": replica("PyTorchJob", 2)},
        run_policy={"managedBy": "kueue.x-k8s.io/multikueue"},
    )
    assert plan(obj, Observed(pods=[]), at(0), PlannerConfig(), cache=JobCache()).empty
    mine = job(
        "PyTorchJob", {"Worker": replica("PyTorchJob", 2)}, run_policy={"managedBy": "kubetrain.io/operator"}
    )
    assert len(plan(mine, Observed(pods=[]), at(0), PlannerConfig(), cache=JobCache()).create_pods) == 2


def test_invalid_job_fails_with_the_field_errors() -> None:
    obj = job("PyTorchJob", {"Master": replica("PyTorchJob", 2), "Worker": replica("PyTorchJob", 1)})
    p = plan(obj, Observed(pods=[]), at(0), PlannerConfig(), cache=JobCache())
    assert p.create_pods == [] and p.create_service is None
    assert p.status is not None
    failed = next(c for c in p.status["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True" and failed["reason"] == "InvalidSpec"
    assert "spec.pytorchReplicaSpecs[Master].replicas" in failed["message"]
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "InvalidSpec")]
    assert "spec.pytorchReplicaSpecs[Master].replicas" in p.events[0].message


def test_service_owned_by_someone_else_blocks_pods() -> None:
    foreign = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pt", "namespace": "ns"}}
    p = plan(PT, Observed(pods=[], service=foreign), at(0), PlannerConfig(), cache=JobCache())
    assert p.create_pods == [] and p.create_service is None
    assert p.status is not None
    running = next(c for c in p.status["conditions"] if c["type"] == "Running")
    assert (running["status"], running["reason"]) == ("False", "ServiceConflict")
    assert "Service pt already exists" in running["message"]
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "ServiceConflict")]
    # The next reconcile says nothing new (no event storm).
    again = plan(with_status(PT, p.status), Observed(pods=[], service=foreign), at(1), PlannerConfig())
    assert again.status is None and again.events == []


def test_observed_generation_and_status_written_only_on_spec_change() -> None:
    sim = Sim(PT)
    sim.step(at(0))
    assert sim.job["status"]["observedGeneration"] == 1
    sim.job["metadata"]["generation"] = 2
    sim.job["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": 60}
    p = sim.step(at(1))
    assert p.status is not None and p.status["observedGeneration"] == 2


def test_reconcile_is_fast_for_an_unchanged_large_job() -> None:
    import time

    obj = job("PyTorchJob", {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 63)})
    sim = Sim(obj)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    start = time.perf_counter()
    for _ in range(50):
        sim.plan(at(2))
    per_call = (time.perf_counter() - start) / 50
    assert per_call < 0.02, per_call  # the p99 budget of a whole reconcile
