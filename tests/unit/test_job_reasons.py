"""Condition and event reasons per API group (docs/behaviour.md §5; frameworks/jobreasons.py):
kubeflow.org's v1 kinds write training-operator v1.9's `<Kind><Reason>`, an MPIJob written as
mpi-operator's writes mpi-operator's `MPIJob<Reason>`, kubetrain.io and training.kubedl.io keep
kubetrain's (KubeDL's are the same); a status stored under either naming reads the same."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica

from kubetrain.frameworks.jobreasons import canonical, read_status, reason_names, written_status

Obj = dict[str, Any]


def pytorch(api_version: str = "kubeflow.org/v1", **kw: Any) -> Obj:
    obj = job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1, "OnFailure"), "Worker": replica("PyTorchJob", 1, "OnFailure")},
        **kw,
    )
    obj["apiVersion"] = api_version
    return obj


def reasons(s: Sim) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in s.job["status"]["conditions"]}


def run(s: Sim) -> None:
    """Create the pods and run them all."""
    s.step(at(0))
    s.all_phase("Running")
    s.step(at(1))


def test_each_group_names_kubetrains_reasons_its_own_way() -> None:
    """training-operator v1.9: pkg/util/status.go NewReason(kind, reason); a job over its backoff
    limit or deadline is `<Kind>Failed` (common/job.go ReconcileJobs). mpi-operator v0.8:
    mpi_job_controller_status.go, with batch/v1 Job's failure reasons kept. KubeDL's
    pkg/util/status.go has kubetrain's own."""
    tf = reason_names({"apiVersion": "kubeflow.org/v1", "kind": "TFJob"})
    assert [tf.written(r) for r in ("JobCreated", "JobRunning", "JobRestarting", "JobSucceeded")] == [
        "TFJobCreated",
        "TFJobRunning",
        "TFJobRestarting",
        "TFJobSucceeded",
    ]
    assert {
        tf.written(r) for r in ("JobFailed", "BackoffLimitExceeded", "DeadlineExceeded", "PermanentExitCode")
    } == {"TFJobFailed"}
    assert (tf.written("JobSuspended"), tf.written("JobResumed")) == ("TFJobSuspended", "TFJobResumed")
    for kubetrains in ("GangScheduling", "InvalidSpec", "PodFailurePolicy", "RestartJob", "FailedCreatePod"):
        assert tf.written(kubetrains) == kubetrains

    mpi = reason_names({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob"})
    assert [mpi.written(r) for r in ("JobCreated", "JobRunning", "JobSucceeded", "JobFailed")] == [
        "MPIJobCreated",
        "MPIJobRunning",
        "MPIJobSucceeded",
        "MPIJobFailed",
    ]
    assert (mpi.written("JobSuspended"), mpi.written("JobResumed")) == ("MPIJobSuspended", "MPIJobResumed")
    assert [mpi.written(r) for r in ("BackoffLimitExceeded", "DeadlineExceeded", "JobRestarting")] == [
        "BackoffLimitExceeded",
        "DeadlineExceeded",
        "JobRestarting",
    ]
    v1_created = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"annotations": {"kubetrain.io/created-api-version": "kubeflow.org/v1"}},
    }
    assert reason_names(v1_created).written("BackoffLimitExceeded") == "MPIJobFailed"  # training-operator's

    for api_version in ("kubetrain.io/v1", "training.kubedl.io/v1alpha1"):
        names = reason_names({"apiVersion": api_version, "kind": "PyTorchJob"})
        assert names.written("JobRunning") == "JobRunning"
        assert names.written("BackoffLimitExceeded") == "BackoffLimitExceeded"


def test_every_naming_reads_back_as_kubetrains() -> None:
    assert [canonical(r) for r in ("PyTorchJobRunning", "MPIJobRunning", "JobRunning")] == ["JobRunning"] * 3
    assert canonical("XGBoostJobRestarting") == "JobRestarting"
    assert canonical("JAXJobFailed") == "JobFailed"
    assert canonical("GangScheduling") == "GangScheduling"
    assert canonical("TrainJobRunning") == "TrainJobRunning"  # not a kind Kubeflow's v1 names


def test_reading_a_status_never_changes_the_stored_one() -> None:
    stored = {"conditions": [{"type": "Running", "status": "True", "reason": "TFJobRunning", "message": "m"}]}
    before = copy.deepcopy(stored)
    read = read_status(stored)
    assert read["conditions"][0]["reason"] == "JobRunning"
    assert stored == before
    ours = {"conditions": [{"type": "Running", "status": "True", "reason": "JobRunning", "message": "m"}]}
    assert read_status(ours) is ours


def test_a_condition_left_as_read_keeps_its_stored_reason() -> None:
    stored = {"conditions": [{"type": "Created", "status": "True", "reason": "JobCreated", "message": "c"}]}
    read = read_status(stored)
    new = copy.deepcopy(read)
    new["conditions"].append({"type": "Running", "status": "True", "reason": "JobRunning", "message": "r"})
    names = reason_names({"apiVersion": "kubeflow.org/v1", "kind": "TFJob"})
    out = written_status(new, read, stored, names)
    assert [c["reason"] for c in out["conditions"]] == ["JobCreated", "TFJobRunning"]


def test_a_kubeflow_job_lives_with_training_operators_reasons_and_events() -> None:
    s = Sim(pytorch())
    s.step(at(0))
    assert reasons(s) == {"Created": ("True", "PyTorchJobCreated")}
    assert s.condition("Created")["message"] == "PyTorchJob train is created."  # type: ignore[index]
    s.all_phase("Running")
    s.step(at(1))
    assert reasons(s)["Running"] == ("True", "PyTorchJobRunning")
    s.set_phase("train-master-0", "Succeeded", exit_code=0)
    s.step(at(2))
    assert reasons(s)["Succeeded"] == ("True", "PyTorchJobSucceeded")
    assert reasons(s)["Running"] == ("False", "PyTorchJobSucceeded")
    # training-operator records no event for Created nor Running (those are mpi-operator's).
    assert [(e.type, e.reason) for e in s.events] == [("Normal", "PyTorchJobSucceeded")]


def test_a_kubeflow_job_restarting_and_over_its_backoff_limit() -> None:
    """OnFailure: a failed pod is recreated — `<Kind>Restarting` condition and Warning event, as
    training-operator's ReconcilePods; over backoffLimit the job is `<Kind>Failed`, as its
    ReconcileJobs (no `BackoffLimitExceeded` in kubeflow.org/v1)."""
    s = Sim(pytorch(run_policy={"backoffLimit": 1}))
    run(s)
    s.set_phase("train-worker-0", "Failed", exit_code=1)
    s.step(at(2))
    assert reasons(s)["Restarting"] == ("True", "PyTorchJobRestarting")
    assert ("Warning", "PyTorchJobRestarting") in [(e.type, e.reason) for e in s.events]
    s.step(at(3))
    s.all_phase("Running")
    s.step(at(4))
    s.set_phase("train-worker-0", "Failed", exit_code=1)
    s.step(at(5))
    assert reasons(s)["Failed"] == ("True", "PyTorchJobFailed")
    assert "JobRestarting" not in [e.reason for e in s.events]


def test_a_kubeflow_job_past_its_deadline_is_kind_failed() -> None:
    s = Sim(pytorch(run_policy={"activeDeadlineSeconds": 10}))
    run(s)
    s.step(at(20))
    assert reasons(s)["Failed"] == ("True", "PyTorchJobFailed")
    assert ("Warning", "PyTorchJobFailed") in [(e.type, e.reason) for e in s.events]


@pytest.mark.parametrize("api_version", ["kubetrain.io/v1"])
def test_kubetrain_io_keeps_kubetrains_reasons(api_version: str) -> None:
    s = Sim(pytorch(api_version, run_policy={"backoffLimit": 0}))
    run(s)
    assert reasons(s) == {"Created": ("True", "JobCreated"), "Running": ("True", "JobRunning")}
    s.set_phase("train-worker-0", "Failed", exit_code=1)
    s.step(at(2))
    assert reasons(s)["Failed"] == ("True", "BackoffLimitExceeded")


def restamp(s: Sim, naming: str) -> None:
    """Rewrite the job's stored reasons as an operator with `naming` would have written them
    ("": kubetrain's, as kubeflow.org's were before it had its own; "PyTorch": training-operator's)."""
    for cond in s.job["status"]["conditions"]:
        cond["reason"] = naming + canonical(cond["reason"]) if naming else canonical(cond["reason"])


@pytest.mark.parametrize("naming", ["", "PyTorch"])
def test_an_upgraded_operator_reads_a_running_job_either_way(naming: str) -> None:
    """A job stored with the old (`JobRunning`) or the new (`PyTorchJobRunning`) reasons is read as
    the same running job: nothing is rewritten for the reasons alone; its next transition is
    written in training-operator's reasons and the untouched conditions keep theirs."""
    s = Sim(pytorch())
    run(s)
    restamp(s, naming)
    assert s.plan(at(2)).status is None  # read as it is: running, nothing to write
    s.set_phase("train-worker-0", "Failed", exit_code=1)
    s.step(at(3))
    assert reasons(s) == {
        "Created": ("True", naming + "JobCreated"),
        "Running": ("False", "PyTorchJobRestarting"),
        "Restarting": ("True", "PyTorchJobRestarting"),
    }
    assert s.restarts("Worker") == 1


@pytest.mark.parametrize("naming", ["", "PyTorch"])
def test_a_job_suspended_under_either_naming_resumes(naming: str) -> None:
    s = Sim(pytorch(run_policy={"suspend": True}))
    s.step(at(0))
    assert reasons(s)["Suspended"] == ("True", "PyTorchJobSuspended")
    restamp(s, naming)
    assert s.plan(at(1)).status is None
    s.job["spec"]["runPolicy"]["suspend"] = False
    s.job["metadata"]["generation"] = 2
    s.step(at(2))
    assert reasons(s)["Suspended"] == ("False", "PyTorchJobResumed")
    assert ("Normal", "PyTorchJobResumed") in [(e.type, e.reason) for e in s.events]
    assert len(s.pods) == 2


@pytest.mark.parametrize(
    ("kind", "types", "running", "done"),
    [
        ("TFJob", ("Worker",), "TFJob ns/train is running.", "TFJob ns/train successfully completed."),
        ("JAXJob", ("Worker",), "JAXJob ns/train is running.", "JAXJob ns/train successfully completed."),
        (
            "PyTorchJob",
            ("Master", "Worker"),
            "PyTorchJob train is running.",
            "PyTorchJob train is successfully completed.",
        ),
        (
            "PyTorchJob",
            ("Worker",),
            "PyTorchJob ns/train is running.",
            "PyTorchJob ns/train successfully completed.",
        ),
        (
            "XGBoostJob",
            ("Master", "Worker"),
            "XGBoostJob train is running.",
            "XGBoostJob train is successfully completed.",
        ),
    ],
)
def test_a_kubeflow_job_is_running_and_succeeds_in_training_operators_words(
    kind: str, types: tuple[str, ...], running: str, done: str
) -> None:
    """Each kind's UpdateJobStatus (training-operator v1.9): TFJob and JAXJob name the job
    namespace/name, PyTorchJob without a Master too; with one it `is successfully completed.`"""
    obj = job(kind, {t: replica(kind, 1) for t in types})
    obj["apiVersion"] = "kubeflow.org/v1"
    s = Sim(obj)
    run(s)
    assert s.condition("Running")["message"] == running  # type: ignore[index]
    s.all_phase("Succeeded", exit_code=0)
    s.step(at(2))
    assert s.condition("Succeeded")["message"] == done  # type: ignore[index]
    assert [e.message for e in s.events if e.reason == f"{kind}Succeeded"] == [done]


def test_kubetrain_io_keeps_kubetrains_messages() -> None:
    s = Sim(job("TFJob", {"Worker": replica("TFJob", 1)}))
    run(s)
    assert s.condition("Running")["message"] == "TFJob train is running."  # type: ignore[index]
    s.all_phase("Succeeded", exit_code=0)
    s.step(at(2))
    assert s.condition("Succeeded")["message"] == "TFJob train successfully completed."  # type: ignore[index]
