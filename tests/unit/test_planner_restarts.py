"""plan() and docs/behaviour.md §6: exit-code restarts, OnFailure recreation, backoffLimit counting
recreations and in-place container restarts, counts that survive an operator restart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import at, job, replica, running_sim

from kubetrain.operator.prepare import JobCache


def exitcode_job(**run_policy: Any) -> dict[str, Any]:
    return job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1, "ExitCode"), "Worker": replica("PyTorchJob", 2, "ExitCode")},
        name="ec",
        run_policy=run_policy or None,
    )


# 256 and above: a Windows container's exit code (0x40010004, DBG_TERMINATE_PROCESS);
# training-operator's IsRetryableExitCode retries every code from 128 up.
@pytest.mark.parametrize("code", [128, 130, 137, 143, 255, 256, 1073807364])
def test_exitcode_signal_is_retried_under_the_same_name(code: int) -> None:
    sim = running_sim(exitcode_job())
    sim.set_phase("ec-worker-1", "Failed", exit_code=code)
    p = sim.step(at(5))
    assert p.delete_pods == ["ec-worker-1"] and p.create_pods == []
    assert sim.is_true("Restarting") and not sim.is_true("Running")
    assert sim.restarts("Worker") == 1
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "JobRestarting")]
    assert f"exited with code {code}" in p.events[0].message
    # Next reconcile: the pod is gone and is recreated under the same name, carrying its count.
    p2 = sim.step(at(6))
    assert [x["metadata"]["name"] for x in p2.create_pods] == ["ec-worker-1"]
    assert "annotations" not in p2.create_pods[0]["metadata"]  # the count is the job's record
    assert sim.job["status"]["replicaStatuses"]["Worker"]["priorRestarts"] == 1
    assert p2.create_pods[0]["spec"]["restartPolicy"] == "Never"
    sim.set_phase("ec-worker-1", "Running")
    sim.step(at(7))
    assert sim.is_true("Running") and not sim.is_true("Restarting")
    assert sim.restarts("Worker") == 1  # counted once, whatever the number of reconciles


# Negative: a Windows NTSTATUS code as the kubelet's int32 shows it (0xC0000005, access violation).
@pytest.mark.parametrize("code", [1, 2, 127, -1, -1073741819])
def test_exitcode_permanent_fails_the_job(code: int) -> None:
    sim = running_sim(exitcode_job())
    sim.set_phase("ec-worker-0", "Failed", exit_code=code)
    p = sim.step(at(5))
    failed = sim.condition("Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "PermanentExitCode"
    assert "pod ec-worker-0: container pytorch exited with code" in failed["message"]
    assert str(code) in failed["message"]
    assert p.create_pods == []
    assert sorted(p.delete_pods) == ["ec-master-0", "ec-worker-1"]  # cleanPodPolicy Running
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "PermanentExitCode")]


@pytest.mark.parametrize(
    "pod_status",
    [
        {"reason": "Evicted"},
        {"reason": "Preempted"},
        {"reason": "NodeLost"},
        {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]},
        {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC"}]},
    ],
)
def test_exitcode_disruption_is_retried_even_with_a_low_exit_code(pod_status: dict[str, Any]) -> None:
    sim = running_sim(exitcode_job())
    sim.set_phase("ec-worker-0", "Failed", exit_code=1)
    sim.pods["ec-worker-0"]["status"].update(pod_status)
    p = sim.step(at(5))
    assert p.delete_pods == ["ec-worker-0"] and not sim.is_true("Failed")


def test_never_policy_failed_pod_fails_the_job() -> None:
    sim = running_sim(job("TFJob", {"Worker": replica("TFJob", 2)}, name="tf"))
    sim.set_phase("tf-worker-1", "Failed", exit_code=137)
    sim.step(at(5))
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "JobFailed" and "tf-worker-1" in failed["message"]


def test_onfailure_evicted_pod_is_recreated() -> None:
    sim = running_sim(
        job("PyTorchJob", {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 1)})
    )
    name = next(n for n in sim.pods if "worker" in n)
    sim.set_phase(name, "Failed", reason="Evicted")
    p = sim.step(at(5))
    assert p.delete_pods == [name]
    assert sim.is_true("Restarting")
    p2 = sim.step(at(6))
    assert [x["metadata"]["name"] for x in p2.create_pods] == [name]


def test_a_pod_failed_by_pod_gc_is_recreated_without_counting_a_restart() -> None:
    """The pod garbage collector marks the pod of a deleted node Failed with DisruptionTarget
    (DeletionByPodGC) before force-deleting it: a disruption, as an eviction, so backoffLimit 0
    still holds."""
    sim = running_sim(
        job(
            "PyTorchJob",
            {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 1)},
            name="gc",
            run_policy={"backoffLimit": 0},
        )
    )
    sim.set_phase("gc-worker-0", "Failed")
    sim.pods["gc-worker-0"]["status"]["conditions"] = [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists",
        }
    ]
    p = sim.step(at(5))
    assert p.delete_pods == ["gc-worker-0"] and not sim.is_true("Failed")
    p = sim.step(at(6))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["gc-worker-0"]
    assert sim.restarts("Worker") == 0 and not sim.is_true("Failed")


def test_backoff_limit_counts_in_place_restarts() -> None:
    obj = job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 2)},
        name="bo",
        run_policy={"backoffLimit": 3},
    )
    sim = running_sim(obj)
    sim.set_phase("bo-worker-0", "Running", restart_count=2)  # the kubelet restarted it twice
    p = sim.step(at(5))
    assert sim.restarts("Worker") == 2 and sim.is_true("Restarting") and not sim.is_true("Failed")
    assert "2 in-place container restart(s) of Worker pods" in p.events[0].message
    sim.step(at(6))
    assert sim.is_true("Running") and sim.restarts("Worker") == 2  # not counted twice
    sim.set_phase("bo-worker-1", "Running", restart_count=1)
    sim.step(at(7))
    assert sim.restarts("Worker") == 3 and not sim.is_true("Failed")  # 3 restarts allowed
    sim.set_phase("bo-worker-1", "Running", restart_count=2)
    p = sim.step(at(8))
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert sorted(p.delete_pods) == ["bo-master-0", "bo-worker-0", "bo-worker-1"]


def test_backoff_limit_counts_recreations() -> None:
    sim = running_sim(exitcode_job(backoffLimit=1))
    sim.set_phase("ec-worker-0", "Failed", exit_code=137)
    sim.step(at(5))
    sim.step(at(6))  # recreated
    sim.set_phase("ec-worker-0", "Failed", exit_code=137)
    p = sim.step(at(7))
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert p.create_pods == [] and "ec-master-0" in p.delete_pods


def test_restarts_survive_an_operator_restart_and_pod_deletion() -> None:
    sim = running_sim(exitcode_job())
    sim.set_phase("ec-worker-0", "Running", restart_count=0)
    sim.set_phase("ec-worker-1", "Failed", exit_code=137)
    sim.step(at(5))
    sim.step(at(6))
    sim.set_phase("ec-worker-1", "Running")
    sim.step(at(7))
    assert sim.restarts("Worker") == 1
    sim.cache = JobCache()  # a new operator process: only the cluster state remains
    assert sim.step(at(8)).status is None
    del sim.pods["ec-worker-1"]  # someone deletes the recreated pod
    p = sim.step(at(9))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["ec-worker-1"]
    assert sim.restarts("Worker") == 1
    sim.set_phase("ec-worker-1", "Running", restart_count=1)  # the new pod restarts in place
    sim.step(at(10))
    assert sim.restarts("Worker") == 2


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "ExitCode"])
def test_pod_in_phase_unknown_is_waited_for_not_failed_or_recreated(policy: str) -> None:
    """Node lost, pod still bound (phase Unknown): not a failure, not recreated (its name is
    taken until the node controller / pod GC removes it); it counts as pending."""
    sim = running_sim(
        job(
            "PyTorchJob",
            {"Master": replica("PyTorchJob", 1, policy), "Worker": replica("PyTorchJob", 2, policy)},
            name="nl",
            run_policy={"backoffLimit": 0},
        )
    )
    sim.set_phase("nl-worker-1", "Unknown", reason="NodeLost")
    p = sim.step(at(5))
    assert p.delete_pods == [] and p.create_pods == []
    assert not sim.is_true("Failed") and not sim.is_true("Restarting")
    # Once the pod is gone (force-deleted by pod GC), it is recreated under the same name,
    # without counting a restart (nothing of the training failed; backoffLimit 0 still holds).
    del sim.pods["nl-worker-1"]
    p = sim.step(at(6))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["nl-worker-1"]
    assert not sim.is_true("Failed")
    assert sim.restarts("Worker") == 0


def test_terminating_disrupted_pod_is_replaced_only_once_gone() -> None:
    """Taint-based eviction (DisruptionTarget, then deletion) of a Never pod: the job does not
    fail; the pod is recreated once the old one has left the API."""
    sim = running_sim(job("TFJob", {"Worker": replica("TFJob", 2)}, name="tb"))
    victim = sim.pods["tb-worker-1"]
    victim["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:05Z"
    victim["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
    ]
    p = sim.step(at(6))
    assert p.create_pods == [] and p.delete_pods == [] and not sim.is_true("Failed")
    del sim.pods["tb-worker-1"]
    p = sim.step(at(7))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tb-worker-1"]


def test_elastic_workers_scaled_outside_min_max_run_at_the_bound() -> None:
    """The scale subresource bypasses the webhook: 6 Workers with maxReplicas 4 run 4 (one
    Warning event for that generation), the job does not fail."""
    sim = running_sim(
        job(
            "PyTorchJob",
            {"Worker": replica("PyTorchJob", 2)},
            name="el",
            elasticPolicy={"minReplicas": 1, "maxReplicas": 4},
        )
    )
    sim.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 6
    sim.job["metadata"]["generation"] = 2
    p = sim.step(at(2))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["el-worker-2", "el-worker-3"]
    assert p.delete_pods == [] and not sim.is_true("Failed")
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "SpecAdjusted")]
    assert "outside elasticPolicy minReplicas..maxReplicas (1..4): running 4 Workers" in p.events[0].message
    assert sim.job["status"]["replicas"] == 4
    assert sim.step(at(3)).events == []  # said once per generation
    sim.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 0
    sim.job["metadata"]["generation"] = 3
    p = sim.step(at(4))
    assert sorted(p.delete_pods) == ["el-worker-1", "el-worker-2", "el-worker-3"]
    assert not sim.is_true("Failed")


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "ExitCode"])
def test_a_gang_member_the_scheduler_preempts_is_replaced_without_failing_the_job(policy: str) -> None:
    """Volcano issue 2560 (and 1163): Volcano preempts by deleting a pod (Ready=False, reason
    `Evict`; no DisruptionTarget), whose container then exits 143 and which reaches phase Failed
    while it terminates. That is not the training's failure under any restartPolicy, `Never`
    included: the pod is replaced once it has left the API, and no restart is counted."""
    obj = job(
        "PyTorchJob", {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 2)}, name="vp"
    )
    for spec in obj["spec"]["pytorchReplicaSpecs"].values():
        spec["restartPolicy"] = policy
    sim = running_sim(obj)
    victim = sim.pods["vp-worker-1"]
    victim["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:05Z"
    victim["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "Evict"}]
    sim.set_phase("vp-worker-1", "Failed", exit_code=143)
    p = sim.step(at(6))
    assert p.create_pods == [] and p.delete_pods == [] and not sim.is_true("Failed")
    del sim.pods["vp-worker-1"]
    p = sim.step(at(7))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["vp-worker-1"]
    assert not sim.is_true("Failed") and sim.restarts("Worker") == 0
