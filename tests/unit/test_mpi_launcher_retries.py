"""An mpi-operator MPIJob's Launcher is retried as mpi-operator's launcher Job retries it
(docs/behaviour.md §4, "MPIJob", Lifecycle; mpi-operator issue #651): mpi-operator runs the
Launcher as a batch Job whose `backoffLimit` is the MPIJob's `runPolicy.backoffLimit` (batch/v1's
6 when unset), so a Launcher that fails under `restartPolicy: Never` gets a new pod until then."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at
from test_mpi_operator_cases import mpijob

LAUNCHER = "foo-launcher-0"


def never_launcher(backoff_limit: int | None = None, **run_policy: Any) -> dict[str, Any]:
    if backoff_limit is not None:
        run_policy["backoffLimit"] = backoff_limit
    obj = mpijob(run_policy=run_policy or None)
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    return obj


class Clock:
    def __init__(self) -> None:
        self.t = 0

    def __call__(self) -> Any:
        self.t += 1
        return at(self.t)


def started(obj: dict[str, Any]) -> tuple[Sim, Clock]:
    sim, now = Sim(obj), Clock()
    sim.step(now())
    sim.all_phase("Running")
    sim.step(now())
    assert sorted(sim.pods) == [LAUNCHER, "foo-worker-0"]
    return sim, now


def fail_launcher(sim: Sim, now: Clock, exit_code: int = 1) -> Any:
    """The Launcher (recreated first if it is gone) fails with `exit_code`; the reconcile after."""
    if LAUNCHER not in sim.pods:
        sim.step(now())
    sim.set_phase(LAUNCHER, "Failed", exit_code=exit_code)
    return sim.step(now())


@pytest.mark.parametrize(("backoff_limit", "retries"), [(2, 2), (0, 0), (None, 6)])
def test_a_never_launcher_gets_a_new_pod_until_the_backoff_limit(
    backoff_limit: int | None, retries: int
) -> None:
    """batch/v1 Job: each failed pod is replaced while failures <= backoffLimit; the one past it
    fails the Job, and mpi-operator's MPIJob with it (`updateMPIJobFailedStatus`)."""
    sim, now = started(never_launcher(backoff_limit))
    for n in range(1, retries + 1):
        p = fail_launcher(sim, now)
        assert p.delete_pods == [LAUNCHER] and not sim.is_true("Failed")
        assert sim.restarts("Launcher") == n
        (event,) = [e for e in p.events if e.reason == "JobRestarting"]
        assert f"restart {n} of backoffLimit {retries}" in event.message
        assert "as mpi-operator's launcher Job" in event.message
        sim.step(now())  # the new Launcher pod
        assert sim.pods[LAUNCHER]["status"]["phase"] == "Pending"
    fail_launcher(sim, now)
    failed = sim.condition("Failed")
    assert failed is not None and failed["status"] == "True"
    assert failed["reason"] == "BackoffLimitExceeded"
    assert f"reached its backoffLimit of {retries}" in failed["message"]


def test_a_retried_launcher_that_succeeds_completes_the_job() -> None:
    sim, now = started(never_launcher(3))
    fail_launcher(sim, now)
    sim.step(now())
    sim.set_phase(LAUNCHER, "Succeeded", exit_code=0)
    sim.step(now())
    assert sim.is_true("Succeeded") and not sim.is_true("Failed")
    assert sim.restarts("Launcher") == 1


def test_a_fail_job_rule_still_fails_a_never_launcher_at_once() -> None:
    """A failure rule decides before the launcher Job's retry, as batch/v1's podFailurePolicy does."""
    rules = [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}]
    sim, now = started(never_launcher(5, podFailurePolicy={"rules": rules}))
    fail_launcher(sim, now, exit_code=3)
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "PodFailurePolicy"


@pytest.mark.parametrize(
    "convention",
    [
        # training-operator v1.9's MPIJob controller ran the Launcher as a pod: Never fails the job.
        {"metadata": {"annotations": {"kubetrain.io/created-api-version": "kubeflow.org/v1"}}},
        # kubetrain's own group: every replica type follows §6.
        {"apiVersion": "kubetrain.io/v1"},
    ],
)
def test_other_mpijobs_keep_never_as_a_job_failure(convention: dict[str, Any]) -> None:
    obj = never_launcher(3)
    obj["metadata"].update(convention.get("metadata", {}))
    obj["apiVersion"] = convention.get("apiVersion", obj["apiVersion"])
    sim, now = started(obj)
    p = fail_launcher(sim, now)
    failed = sim.condition("Failed")
    assert failed is not None and failed["status"] == "True" and "exited with code 1" in failed["message"]
    assert p.delete_pods == []


def test_other_mpijobs_keep_no_backoff_limit_when_unset() -> None:
    """Only an mpi-operator MPIJob gets batch/v1's default: an OnFailure Launcher of a
    kubetrain.io MPIJob restarts in place without a limit, as every kind's unset backoffLimit."""
    obj = mpijob()
    obj["apiVersion"] = "kubetrain.io/v1"
    sim, now = started(obj)
    sim.set_phase(LAUNCHER, "Running", restart_count=7)
    sim.step(now())
    assert not sim.is_true("Failed") and sim.restarts("Launcher") == 7


def test_an_on_failure_launcher_crash_looping_fails_past_the_default_limit() -> None:
    """mpi-operator's launcher Job counts the OnFailure pod's container restarts against its
    backoffLimit, 6 when unset."""
    sim, now = started(mpijob())
    sim.set_phase(LAUNCHER, "Running", restart_count=6)
    sim.step(now())
    assert not sim.is_true("Failed")
    sim.set_phase(LAUNCHER, "Running", restart_count=7)
    sim.step(now())
    failed = sim.condition("Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert "reached its backoffLimit of 6" in failed["message"]
