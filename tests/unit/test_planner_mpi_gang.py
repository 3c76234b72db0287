"""Gang scheduling an MPIJob whose Launcher waits for its Workers (docs/behaviour.md §8): the
PodGroup counts the Workers only — minMember, minResources and the minAvailable default — since
a Launcher created after the Workers are Ready can never be part of the gang the Workers wait
for (mpi-operator issue #608). With AtStartup the Launcher is a member like any pod."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica

from kubetrain.jobs.defaulting import default_job
from kubetrain.operator.jobchildren import build_pod_group
from kubetrain.operator.plan import PlannerConfig
from kubetrain.operator.prepare import prepare_job

LAUNCHER_RES = {"requests": {"cpu": "1", "memory": "1Gi"}}
WORKER_RES = {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"nvidia.com/gpu": "2"}}


def mpijob(
    policy: str | None, workers: int = 2, scheduling: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    if policy is not None:
        spec["launcherCreationPolicy"] = policy
    return job(
        "MPIJob",
        {
            "Launcher": replica("MPIJob", 1, resources=LAUNCHER_RES),
            "Worker": replica("MPIJob", workers, resources=WORKER_RES),
        },
        name="pi",
        run_policy={"schedulingPolicy": scheduling} if scheduling is not None else None,
        **spec,
    )


def defaulted(obj: dict[str, Any]) -> dict[str, Any]:
    return default_job(obj, gang_scheduling=True).obj


def pod_group_spec(obj: dict[str, Any], gang: str = "volcano") -> dict[str, Any]:
    prepared = prepare_job(obj, gang_scheduling=True)
    assert prepared.shape is not None, prepared.errors
    group = build_pod_group(prepared.shape, gang)
    assert group is not None
    spec: dict[str, Any] = group["spec"]
    return spec


def min_available(obj: dict[str, Any]) -> Any:
    return obj["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"]


@pytest.mark.parametrize(("policy", "expected"), [("WaitForWorkersReady", 3), ("AtStartup", 4), (None, 4)])
def test_min_available_default_leaves_a_waiting_launcher_out(policy: str | None, expected: int) -> None:
    assert min_available(defaulted(mpijob(policy, workers=3))) == expected


def test_min_available_default_follows_the_policy_on_update() -> None:
    old = defaulted(mpijob("AtStartup"))
    assert min_available(old) == 3
    new = mpijob("WaitForWorkersReady", scheduling={"minAvailable": 3})
    # The stored value was the gang default: it follows the new default (Workers only).
    assert min_available(default_job(new, gang_scheduling=True, old=old).obj) == 2


@pytest.mark.parametrize("gang", ["volcano", "scheduler-plugins"])
def test_pod_group_counts_the_workers_only_when_the_launcher_waits(gang: str) -> None:
    spec = pod_group_spec(mpijob("WaitForWorkersReady"), gang)
    assert spec["minMember"] == 2
    # Two Workers' requests (GPU from limits); the Launcher's 1 CPU / 1Gi is not reserved.
    assert spec["minResources"] == {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "4"}


def test_pod_group_counts_the_launcher_at_startup() -> None:
    spec = pod_group_spec(mpijob("AtStartup"))
    assert spec["minMember"] == 3
    assert spec["minResources"] == {"cpu": "9", "memory": "17Gi", "nvidia.com/gpu": "4"}


def test_a_min_available_counting_the_waiting_launcher_is_capped_at_the_workers() -> None:
    # A job stored before this rule (minAvailable 3 = Launcher + 2 Workers) or set by hand:
    # a gang of 3 could never form, so the PodGroup asks for the 2 Workers.
    spec = pod_group_spec(mpijob("WaitForWorkersReady", scheduling={"minAvailable": 3}))
    assert spec["minMember"] == 2
    assert spec["minResources"] == {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "4"}
    # A smaller value is the user's choice and stays.
    assert pod_group_spec(mpijob("WaitForWorkersReady", scheduling={"minAvailable": 1}))["minMember"] == 1


def test_a_launcher_without_workers_to_wait_for_is_the_gang() -> None:
    # No Workers (the Launcher runs as the only worker): the gate is open at once, so the
    # Launcher is the gang.
    obj = mpijob("WaitForWorkersReady", workers=0, runLauncherAsWorker=True)
    assert min_available(defaulted(obj)) == 1
    spec = pod_group_spec(obj)
    assert spec["minMember"] == 1
    assert spec["minResources"] == {"cpu": "1", "memory": "1Gi"}


def test_volcano_admits_the_workers_then_the_launcher_follows_their_readiness() -> None:
    sim = Sim(mpijob("WaitForWorkersReady"), PlannerConfig(gang_scheduler="volcano"))
    p = sim.step(at(0))
    assert p.create_pod_group is not None and p.create_pod_group["spec"]["minMember"] == 2
    assert sim.pod_group is not None
    sim.pod_group["status"] = {"phase": "Inqueue"}
    sim.step(at(1))
    assert sorted(sim.created) == ["pi-worker-0", "pi-worker-1"]
    for name in ("pi-worker-0", "pi-worker-1"):
        sim.set_phase(name, "Running")
        sim.pods[name]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    sim.step(at(2))
    assert sorted(sim.created) == ["pi-launcher-0", "pi-worker-0", "pi-worker-1"]
    launcher = sim.pods["pi-launcher-0"]
    # The Launcher is still the gang scheduler's to place, in the job's PodGroup.
    assert launcher["spec"]["schedulerName"] == "volcano"
    assert launcher["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "pi"
