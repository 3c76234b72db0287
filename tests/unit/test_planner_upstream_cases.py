"""Upstream users' complaints replayed on the planner (docs/behaviour.md §12): each test sets up
the reporter's scenario and asserts what kubetrain does instead."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, elastic_pytorch, job, replica, running_sim
from test_mpi_operator_cases import mpijob

from kubetrain.jobs.defaulting import default_job


def test_mpi_operator_647_an_evicted_worker_fails_the_job_and_clean_pod_policy_holds() -> None:
    """mpi-operator issue 647: a Worker evicted from its node failed the MPIJob (`MPIJobEvicted`)
    but `cleanPodPolicy: Running` was not honoured — the other Workers kept running. Here the
    eviction of a `Never` Worker (the default) fails the job and the Launcher and the other
    Workers are deleted in the same reconcile."""
    obj = mpijob(workers=3, run_policy={"backoffLimit": 1, "cleanPodPolicy": "Running"})
    sim = running_sim(default_job(obj).obj)
    victim = sim.pods["foo-worker-1"]
    sim.set_phase("foo-worker-1", "Failed", exit_code=137, reason="Evicted")
    victim["status"]["message"] = "The node was low on resource: memory."
    p = sim.step(at(5))
    failed = sim.condition("Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "MPIJobFailed"
    assert (
        "pod foo-worker-1 was disrupted (Evicted: The node was low on resource: memory.)" in failed["message"]
    )
    assert sorted(p.delete_pods) == ["foo-launcher-0", "foo-worker-0", "foo-worker-2"]
    assert p.create_pods == []
    assert sim.step(at(6)).create_pods == []  # finished: nothing comes back


def test_trainer_2044_a_permanent_exit_code_fails_the_job_whatever_backoff_limit_is_left() -> None:
    """Kubeflow Trainer issue 2044: under `restartPolicy: ExitCode` with `backoffLimit: 3`, a
    Master exiting with code 1 was not retried (right) but the job stayed `Restarting` for good.
    Here it is Failed at once, never Restarting, and no pod is recreated afterwards."""
    sim = running_sim(
        job(
            "PyTorchJob",
            {"Master": replica("PyTorchJob", 1, "ExitCode"), "Worker": replica("PyTorchJob", 1, "ExitCode")},
            name="kfto-01",
            run_policy={"backoffLimit": 3},
        )
    )
    sim.set_phase("kfto-01-master-0", "Failed", exit_code=1)
    p = sim.step(at(5))
    failed = sim.condition("Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "PermanentExitCode"
    assert not sim.is_true("Restarting") and not sim.is_true("Running")
    assert p.create_pods == [] and p.delete_pods == ["kfto-01-worker-0"]
    later = sim.step(at(60))
    assert later.create_pods == [] and later.status is None
    assert sim.restarts("Master") == 0


def test_trainer_1560_deleting_an_exit_code_pod_does_not_fail_the_job() -> None:
    """Kubeflow Trainer issue 1560: with `restartPolicy: ExitCode`, deleting the TFJob's
    Evaluator pod (its container killed, exit code 137) failed the whole TFJob. Here the pod that
    fails while it is being deleted is replaced once it has left the API, and no restart is
    counted — `backoffLimit: 0` still holds."""
    sim = running_sim(
        job(
            "TFJob",
            {
                "Chief": replica("TFJob", 1, "ExitCode"),
                "Worker": replica("TFJob", 2, "ExitCode"),
                "Evaluator": replica("TFJob", 1, "ExitCode"),
            },
            name="tf",
            run_policy={"backoffLimit": 0},
        )
    )
    sim.pods["tf-evaluator-0"]["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:05Z"
    sim.set_phase("tf-evaluator-0", "Failed", exit_code=137)
    p = sim.step(at(6))
    assert p.create_pods == [] and p.delete_pods == []
    assert not sim.is_true("Failed") and not sim.is_true("Restarting")
    del sim.pods["tf-evaluator-0"]
    p = sim.step(at(7))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tf-evaluator-0"]
    assert not sim.is_true("Failed") and sim.restarts("Evaluator") == 0


@pytest.mark.parametrize("kind", ["JAXJob", "XGBoostJob", "PaddleJob"])
def test_trainer_3358_active_deadline_acts_without_any_pod_event(kind: str) -> None:
    """Kubeflow Trainer issue 3358: a JAXJob with `activeDeadlineSeconds: 30` ran on
    indefinitely — training-operator's requeue at the deadline went to a queue that drops it, so
    only a later pod or job event applied the deadline. Here the plan that starts the job asks to
    be woken at exactly startTime + 30 s, and the reconcile at that instant, with no pod having
    changed since, fails the job and deletes its pods."""
    types = {"XGBoostJob": ("Master", "Worker"), "PaddleJob": ("Master", "Worker")}.get(kind, ("Worker",))
    obj = job(
        kind,
        {t: replica(kind, 1 if t == "Master" else 2) for t in types},
        name="dl",
        run_policy={"activeDeadlineSeconds": 30},
    )
    sim = Sim(obj)
    first = sim.step(at(0))
    deadline = at(30)
    assert first.requeue_at == deadline
    sim.all_phase("Running")
    running = sim.step(at(1))
    assert running.requeue_at == deadline and sim.is_true("Running")
    assert sim.plan(deadline - timedelta(seconds=1)).status is None  # nothing to do before it
    pods = sorted(sim.pods)
    fired = sim.step(deadline)
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"
    assert sorted(fired.delete_pods) == pods and len(pods) == len(types) + 1


def test_trainer_1751_an_elastic_job_succeeds_while_a_scaled_up_worker_is_pending() -> None:
    """Kubeflow Trainer issue 1751 (fixed by PR 1752): the HPA added a fourth Worker that stayed
    Pending for want of resources until Workers 0-2 had succeeded; the elastic PyTorchJob stayed
    Running and the late Worker kept restarting, looking for Worker 0. Here an elastic job
    succeeds once any Worker succeeded, and the Pending Worker is deleted (cleanPodPolicy
    Running)."""
    obj = elastic_pytorch({"minReplicas": 1, "maxReplicas": 4})
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 4
    sim = Sim(obj)
    sim.step(at(0))
    for name in ("el-worker-0", "el-worker-1", "el-worker-2"):
        sim.set_phase(name, "Running")
    sim.step(at(1))
    for name in ("el-worker-0", "el-worker-1", "el-worker-2"):
        sim.set_phase(name, "Succeeded", exit_code=0)
    p = sim.step(at(2))
    assert sim.is_true("Succeeded")
    assert p.delete_pods == ["el-worker-3"]


@pytest.mark.parametrize(("policy", "deleted"), [("Running", ["tf-evaluator-0"]), ("None", [])])
def test_trainer_1658_the_evaluator_does_not_hold_back_a_finished_tfjob(
    policy: str, deleted: list[str]
) -> None:
    """Kubeflow Trainer issue 1658: a TFJob succeeds when its Chief does, while the Evaluator may
    still evaluate the last checkpoint, and `cleanPodPolicy: Running` deletes it. Not changed (as
    training-operator decides): the Evaluator, like the PS, never decides the job's success;
    `cleanPodPolicy: None` keeps it running to its end (docs/behaviour.md §5 **Limit**)."""
    sim = running_sim(
        job(
            "TFJob",
            {
                "Chief": replica("TFJob", 1),
                "Worker": replica("TFJob", 1),
                "Evaluator": replica("TFJob", 1),
            },
            name="tf",
            run_policy={"cleanPodPolicy": policy},
        )
    )
    sim.set_phase("tf-chief-0", "Succeeded", exit_code=0)
    sim.set_phase("tf-worker-0", "Succeeded", exit_code=0)
    p = sim.step(at(5))
    assert sim.is_true("Succeeded")
    assert p.delete_pods == deleted


def test_trainer_1768_an_exit_code_launcher_killed_with_its_worker_is_retried() -> None:
    """Kubeflow Trainer issue 1768: an MPIJob whose Launcher has `restartPolicy: ExitCode`;
    deleting a running Worker made the Launcher's mpirun exit 137; the Worker was made again but
    the Launcher never restarted and the job hung. Here the Worker comes back, the Launcher's 137
    is a retryable code (§6), so it is deleted and made again under its name, one restart counted
    against `backoffLimit`, and the job is Restarting, never Failed."""
    sim = running_sim(
        job(
            "MPIJob",
            {"Launcher": replica("MPIJob", 1, "ExitCode"), "Worker": replica("MPIJob", 2, "ExitCode")},
            name="mnist",
            run_policy={"backoffLimit": 3},
        )
    )
    del sim.pods["mnist-worker-1"]  # `kubectl delete pod`, its container gone with it
    sim.set_phase("mnist-launcher-0", "Failed", exit_code=137)
    p = sim.step(at(5))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["mnist-worker-1"]
    assert p.delete_pods == ["mnist-launcher-0"]
    assert sim.is_true("Restarting") and not sim.is_true("Failed")
    p = sim.step(at(6))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["mnist-launcher-0"]
    assert sim.restarts("Launcher") == 1 and not sim.is_true("Failed")
    sim.all_phase("Running")
    sim.step(at(7))
    assert sim.is_true("Running") and not sim.is_true("Restarting")


def test_trainer_881_a_failed_never_ps_fails_the_tfjob() -> None:
    """Kubeflow Trainer issue 881: a TFJob with one PS and two Workers, the PS `restartPolicy:
    Never`; the PS failed, the Workers kept running and the TFJob said Running for hours. Here
    the PS's failure fails the job at once (naming the pod and its exit code) and the running
    Workers are deleted (`cleanPodPolicy: Running`, the default); nothing is made again."""
    sim = running_sim(
        job(
            "TFJob",
            {"PS": replica("TFJob", 1, "Never"), "Worker": replica("TFJob", 2, "Never")},
            name="dtf",
        )
    )
    sim.set_phase("dtf-ps-0", "Failed", exit_code=1)
    p = sim.step(at(5))
    failed = sim.condition("Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "JobFailed"
    assert "pod dtf-ps-0: container tensorflow exited with code 1" in failed["message"]
    assert not sim.is_true("Running")
    assert sorted(p.delete_pods) == ["dtf-worker-0", "dtf-worker-1"] and p.create_pods == []
    assert sim.step(at(6)).create_pods == []
