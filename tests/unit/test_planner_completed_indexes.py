"""plan() and docs/behaviour.md §6 "Succeeded pods": the v1 kinds keep the indexes whose pod
Succeeded in the current run in `status.completedIndexes`, as a Job keeps its own; such an index
whose pod is deleted (pod garbage collection of a removed node, a drain, `kubectl delete`) is not
made again and still counts as Succeeded. The record starts over with the run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica, running_sim

from kubetrain.api.indexes import format_indexes, parse_indexes


def gone(sim: Sim, *names: str) -> None:
    """The pods deleted by someone else (their node removed, a drain, kubectl delete)."""
    for name in names:
        del sim.pods[name]


def workers(sim: Sim) -> dict[str, Any]:
    return dict(sim.job["status"]["replicaStatuses"]["Worker"])


def test_a_deleted_succeeded_worker_is_not_made_again_and_the_job_completes() -> None:
    # PyTorchJob without a Master: every Worker must succeed (training-operator's rule).
    sim = running_sim(job("PyTorchJob", {"Worker": replica("PyTorchJob", 3)}, name="pt"))
    sim.set_phase("pt-worker-1", "Succeeded", exit_code=0)
    sim.step(at(2))
    assert sim.job["status"]["completedIndexes"] == {"Worker": "1"}
    gone(sim, "pt-worker-1")
    p = sim.step(at(3))
    assert p.create_pods == [] and p.delete_pods == []
    assert (workers(sim)["active"], workers(sim)["succeeded"]) == (2, 1)
    assert sim.is_true("Running") and not sim.is_true("Succeeded")
    sim.set_phase("pt-worker-0", "Succeeded", exit_code=0)
    sim.set_phase("pt-worker-2", "Succeeded", exit_code=0)
    sim.step(at(4))
    assert sim.is_true("Succeeded")
    assert workers(sim)["succeeded"] == 3 and "pt-worker-1" not in sim.pods
    assert sim.job["status"]["completedIndexes"] == {"Worker": "0-2"}
    assert sim.created.count("pt-worker-1") == 1


def test_tfjob_workers_that_finished_stay_finished_while_the_chief_runs() -> None:
    tf = job("TFJob", {"Chief": replica("TFJob", 1), "Worker": replica("TFJob", 4, "OnFailure")}, name="tf")
    sim = running_sim(tf)
    # A Worker restarting in place is not Succeeded: it is not recorded.
    sim.set_phase("tf-worker-1", "Running", restart_count=2)
    for name in ("tf-worker-0", "tf-worker-2", "tf-worker-3"):
        sim.set_phase(name, "Succeeded", exit_code=0)
    sim.step(at(2))
    assert sim.job["status"]["completedIndexes"] == {"Worker": "0,2-3"}
    gone(sim, "tf-worker-0", "tf-worker-2", "tf-worker-3")
    p = sim.step(at(3))
    assert p.create_pods == []
    assert (workers(sim)["active"], workers(sim)["succeeded"]) == (1, 3)
    # A Worker that fails is still recreated; the finished ones are not.
    sim.set_phase("tf-worker-1", "Failed", reason="Evicted")
    p = sim.step(at(4))
    assert [x["metadata"]["name"] for x in p.create_pods] == []  # deleted first, made once gone
    assert p.delete_pods == ["tf-worker-1"]
    p = sim.step(at(5))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tf-worker-1"]
    sim.set_phase("tf-chief-0", "Succeeded", exit_code=0)
    sim.step(at(6))
    assert sim.is_true("Succeeded") and workers(sim)["succeeded"] == 3


def test_a_whole_job_restart_starts_the_record_over() -> None:
    rule = {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}
    obj = job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1, "ExitCode"), "Worker": replica("PyTorchJob", 2, "ExitCode")},
        name="fr",
        run_policy={"podFailurePolicy": {"rules": [rule]}},
    )
    sim = running_sim(obj)
    sim.set_phase("fr-worker-0", "Succeeded", exit_code=0)
    sim.step(at(2))
    assert sim.job["status"]["completedIndexes"] == {"Worker": "0"}
    sim.set_phase("fr-worker-1", "Failed", exit_code=42)
    p = sim.step(at(3))
    assert sorted(p.delete_pods) == ["fr-master-0", "fr-worker-0", "fr-worker-1"]
    assert sim.job["status"]["jobRestarts"] == 1 and "completedIndexes" not in sim.job["status"]
    p = sim.step(at(4))
    assert sorted(x["metadata"]["name"] for x in p.create_pods) == [
        "fr-master-0",
        "fr-worker-0",
        "fr-worker-1",
    ]


def test_a_suspend_starts_the_record_over_and_resuming_runs_every_index() -> None:
    sim = running_sim(job("PyTorchJob", {"Worker": replica("PyTorchJob", 2)}, name="sp"))
    sim.set_phase("sp-worker-0", "Succeeded", exit_code=0)
    sim.step(at(2))
    assert sim.job["status"]["completedIndexes"] == {"Worker": "0"}
    sim.job["spec"].setdefault("runPolicy", {})["suspend"] = True
    sim.job["metadata"]["generation"] += 1
    p = sim.step(at(3))
    assert sorted(p.delete_pods) == ["sp-worker-0", "sp-worker-1"]
    assert "completedIndexes" not in sim.job["status"]
    sim.job["spec"]["runPolicy"]["suspend"] = False
    sim.job["metadata"]["generation"] += 1
    p = sim.step(at(4))
    assert sorted(x["metadata"]["name"] for x in p.create_pods) == ["sp-worker-0", "sp-worker-1"]


def test_an_index_beyond_a_smaller_size_is_dropped_from_the_record() -> None:
    sim = running_sim(job("PyTorchJob", {"Worker": replica("PyTorchJob", 3)}, name="el"))
    for name in ("el-worker-0", "el-worker-2"):
        sim.set_phase(name, "Succeeded", exit_code=0)
    sim.step(at(2))
    assert sim.job["status"]["completedIndexes"] == {"Worker": "0,2"}
    sim.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2  # an elastic resize
    sim.job["metadata"]["generation"] += 1
    p = sim.step(at(3))
    assert p.delete_pods == ["el-worker-2"]
    assert sim.job["status"]["completedIndexes"] == {"Worker": "0"}
    assert workers(sim)["succeeded"] == 1


def test_a_record_naming_no_replica_type_or_a_bad_interval_is_dropped() -> None:
    sim = running_sim(job("PyTorchJob", {"Worker": replica("PyTorchJob", 3)}, name="bad"))
    sim.job["status"]["completedIndexes"] = {"Worker": "x,1-1,2-,7", "Launcher": "0"}
    gone(sim, "bad-worker-1", "bad-worker-2")
    p = sim.step(at(2))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["bad-worker-2"]  # index 1 completed
    assert sim.job["status"]["completedIndexes"] == {"Worker": "1"}


@pytest.mark.parametrize(
    ("indexes", "text"),
    [([], ""), ([3], "3"), ([0, 1], "0-1"), ([4, 0, 2, 3, 7, 8, 9], "0,2-4,7-9")],
)
def test_indexes_are_written_in_the_job_apis_compressed_form(indexes: list[int], text: str) -> None:
    assert format_indexes(indexes) == text
    assert parse_indexes(text, 10) == set(indexes)


def test_parsing_ignores_what_is_not_an_index_and_cuts_at_the_size() -> None:
    assert parse_indexes("1,x,-2,3-1,4-,5-6-7, 8 ,0-99999999999", 4) == {0, 1, 2, 3}
    assert parse_indexes("٣,2", 4) == {2}  # decimal digits of other scripts are no index
