"""plan() for MPIJobs: the ConfigMap and the create-only SSH Secret before any pod,
discover_hosts.sh kept current, the Launcher gated on Ready Workers (WaitForWorkersReady), success
and failure with the Launcher, and cleanPodPolicy's MPI default."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica

READY = [{"type": "Ready", "status": "True"}]


def mpijob(workers: int = 2, run_policy: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return job(
        "MPIJob",
        {"Launcher": replica("MPIJob", 1), "Worker": replica("MPIJob", workers)},
        name="pi",
        run_policy=run_policy,
        **spec,
    )


def ready(sim: Sim, name: str, ok: bool = True) -> None:
    sim.set_phase(name, "Running")
    sim.pods[name]["status"]["conditions"] = [{"type": "Ready", "status": "True" if ok else "False"}]


def test_secret_then_config_map_are_created_before_the_pods_once() -> None:
    sim = Sim(mpijob())
    first = sim.step(at(0))
    assert [(c["kind"], c["metadata"]["name"]) for c in first.create_children] == [
        ("Secret", "pi-ssh"),
        ("ConfigMap", "pi-config"),
    ]
    assert sorted(sim.created) == ["pi-launcher-0", "pi-worker-0", "pi-worker-1"]
    # The ConfigMap is observed now: the Secret is not created again (it is never read).
    again = sim.step(at(1))
    assert again.create_children == [] and again.update_children == []
    assert sim.extra_writes == [("create", "Secret", "pi-ssh"), ("create", "ConfigMap", "pi-config")]


def test_a_lost_config_map_is_recreated_with_the_secret_create_answered_409() -> None:
    sim = Sim(mpijob())
    sim.step(at(0))
    del sim.extra[("ConfigMap", "pi-config")]
    again = sim.step(at(1))
    assert [c["kind"] for c in again.create_children] == ["Secret", "ConfigMap"]
    assert ("Secret", "pi-ssh") in sim.extra  # the Sim answers the Secret create 409: kept


def test_discover_hosts_follows_running_workers() -> None:
    sim = Sim(mpijob())
    sim.step(at(0))
    script = lambda: sim.extra[("ConfigMap", "pi-config")]["data"]["discover_hosts.sh"]  # noqa: E731
    assert script() == "#!/bin/sh\n"
    sim.set_phase("pi-worker-1", "Running")
    update = sim.step(at(1))
    assert [c["metadata"]["name"] for c in update.update_children] == ["pi-config"]
    assert script() == "#!/bin/sh\necho pi-worker-1.pi.ns.svc\n"
    sim.set_phase("pi-worker-0", "Running")
    sim.step(at(2))
    assert script() == "#!/bin/sh\necho pi-worker-0.pi.ns.svc\necho pi-worker-1.pi.ns.svc\n"
    assert sim.step(at(3)).update_children == []  # unchanged: no write
    sim.set_phase("pi-worker-0", "Failed", exit_code=1)  # gone from the running set
    sim.step(at(4))
    assert "pi-worker-0" not in script()


def test_wait_for_workers_ready_gates_the_launcher() -> None:
    sim = Sim(mpijob(launcherCreationPolicy="WaitForWorkersReady"))
    sim.step(at(0))
    assert sorted(sim.created) == ["pi-worker-0", "pi-worker-1"]
    ready(sim, "pi-worker-0")
    ready(sim, "pi-worker-1", ok=False)  # Running but not Ready
    sim.step(at(1))
    assert "pi-launcher-0" not in sim.pods and not sim.is_true("Running")
    ready(sim, "pi-worker-1")
    sim.step(at(2))
    assert "pi-launcher-0" in sim.pods
    # AtStartup (the default): everything at once.
    eager = Sim(mpijob())
    eager.step(at(0))
    assert "pi-launcher-0" in eager.pods


def test_wait_for_workers_ready_holds_after_suspend_and_resume() -> None:
    """mpi-operator issue 615 (PR 868): there the policy was judged only when the launcher Job was
    created, so a job created suspended, or suspended while running, started its Launcher on resume
    before any Worker was Ready. Here the gate is judged whenever the Launcher is to be made."""
    obj = mpijob(launcherCreationPolicy="WaitForWorkersReady", run_policy={"suspend": True})
    sim = Sim(obj)
    sim.step(at(0))
    assert sim.pods == {} and sim.is_true("Suspended")
    for when, generation in ((10, 2), (40, 4)):  # resumed after creation; again after a suspend
        sim.job["spec"]["runPolicy"]["suspend"] = False
        sim.job["metadata"]["generation"] = generation
        sim.step(at(when))
        assert sorted(sim.pods) == ["pi-worker-0", "pi-worker-1"]
        sim.all_phase("Running")  # Running, not yet Ready
        sim.step(at(when + 1))
        assert "pi-launcher-0" not in sim.pods
        ready(sim, "pi-worker-0")
        ready(sim, "pi-worker-1")
        sim.step(at(when + 2))
        assert "pi-launcher-0" in sim.pods
        sim.job["spec"]["runPolicy"]["suspend"] = True
        sim.job["metadata"]["generation"] = generation + 1
        sim.step(at(when + 3))
        assert sim.pods == {} and sim.is_true("Suspended")


def test_the_job_succeeds_with_the_launcher_and_keeps_workers_by_default() -> None:
    """cleanPodPolicy defaults to None for MPIJobs (mpi-operator's setDefaultsRunPolicy)."""
    sim = Sim(mpijob())
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    assert sim.is_true("Running")
    sim.set_phase("pi-worker-0", "Succeeded", exit_code=0)  # a worker ending decides nothing
    sim.step(at(2))
    assert not sim.is_true("Succeeded")
    sim.set_phase("pi-launcher-0", "Succeeded", exit_code=0)
    done = sim.step(at(3))
    assert sim.is_true("Succeeded") and done.delete_pods == []


def test_workers_are_deleted_when_the_launcher_finishes_with_clean_pod_policy_running() -> None:
    sim = Sim(mpijob(run_policy={"cleanPodPolicy": "Running"}))
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.set_phase("pi-launcher-0", "Succeeded", exit_code=0)
    done = sim.step(at(2))
    assert sim.is_true("Succeeded") and sorted(done.delete_pods) == ["pi-worker-0", "pi-worker-1"]


def test_launcher_failures_obey_restart_policy_and_backoff_limit() -> None:
    obj = job(
        "MPIJob",
        {"Launcher": replica("MPIJob", 1, "ExitCode"), "Worker": replica("MPIJob", 1)},
        name="pi",
        run_policy={"backoffLimit": 1, "cleanPodPolicy": "Running"},
    )
    sim = Sim(obj)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.set_phase("pi-launcher-0", "Failed", exit_code=137)  # retryable: recreated
    p = sim.step(at(2))
    assert p.delete_pods == ["pi-launcher-0"]
    sim.step(at(3))
    assert "pi-launcher-0" in sim.pods
    sim.set_phase("pi-launcher-0", "Failed", exit_code=137)
    sim.step(at(4))
    assert sim.is_true("Failed") and sim.condition("Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    # Never: the first launcher failure fails the job.
    never = Sim(mpijob(run_policy={"cleanPodPolicy": "Running"}))
    never.job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    never.step(at(0))
    never.all_phase("Running")
    never.step(at(1))
    never.set_phase("pi-launcher-0", "Failed", exit_code=1)
    never.step(at(2))
    assert never.is_true("Failed")


def test_a_config_map_of_the_name_owned_by_someone_else_blocks_pods() -> None:
    sim = Sim(mpijob())
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pi-config", "namespace": "ns"}}
    sim.extra[("ConfigMap", "pi-config")] = foreign
    p = sim.step(at(0))
    assert p.create_pods == [] and p.create_children == []
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "ErrResourceExists")]
