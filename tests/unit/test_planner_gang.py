"""plan() and docs/behaviour.md §8: PodGroups, the Volcano admission wait, a missing PodGroup API."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from admission import review_of
from planner_builders import Sim, at, job, replica

from kubetrain.operator.plan import PlannerConfig


def tf() -> dict[str, Any]:
    return job("TFJob", {"PS": replica("TFJob", 1), "Worker": replica("TFJob", 2)}, name="g")


def test_volcano_waits_for_pod_group_admission() -> None:
    sim = Sim(tf(), PlannerConfig(gang_scheduler="volcano"))
    p = sim.step(at(0))
    assert p.create_pod_group is not None and p.create_pods == []
    assert p.create_pod_group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert p.create_pod_group["spec"]["minMember"] == 3  # minAvailable defaulted to total replicas
    running = sim.condition("Running")
    assert running is not None and (running["status"], running["reason"]) == ("False", "GangScheduling")
    assert sim.step(at(1)).create_pods == []  # phase not set yet
    assert sim.pod_group is not None
    sim.pod_group["status"] = {"phase": "Pending"}
    assert sim.step(at(2)).create_pods == []
    sim.pod_group["status"] = {"phase": "Inqueue"}
    p = sim.step(at(3))
    assert len(p.create_pods) == 3
    pod0 = p.create_pods[0]
    assert pod0["spec"]["schedulerName"] == "volcano"
    assert pod0["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "g"
    assert sim.job["status"]["startTime"] == "2024-05-01T12:00:03Z"


def test_scheduler_plugins_creates_group_and_pods_together() -> None:
    sim = Sim(tf(), PlannerConfig(gang_scheduler="scheduler-plugins", scheduler_name="sp"))
    p = sim.step(at(0))
    assert p.create_pod_group is not None
    assert p.create_pod_group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert len(p.create_pods) == 3
    for pod in p.create_pods:
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "g"
        assert pod["spec"]["schedulerName"] == "sp"
    assert sim.step(at(1)).create_pod_group is None  # created once


def test_missing_pod_group_api_is_reported_not_crashed_on() -> None:
    sim = Sim(tf(), PlannerConfig(gang_scheduler="volcano"))
    sim.crd_installed = False
    p = sim.step(at(0))
    assert p.create_pods == [] and p.create_pod_group is None
    running = sim.condition("Running")
    assert running is not None and running["reason"] == "GangScheduling"
    assert "scheduling.volcano.sh/v1beta1 is not installed" in running["message"]
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "PodGroupAPIMissing")]
    assert sim.step(at(1)).events == []  # said once
    sim.crd_installed = True
    assert sim.step(at(2)).create_pod_group is not None


def test_finished_job_deletes_its_pod_group() -> None:
    sim = Sim(tf(), PlannerConfig(gang_scheduler="scheduler-plugins"))
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.set_phase("g-worker-0", "Succeeded", exit_code=0)
    done = sim.step(at(2))
    assert sim.is_true("Succeeded") and done.delete_pod_group


def _with_scheduler(name: str) -> dict[str, Any]:
    obj = tf()
    obj["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = name
    return obj


def test_user_scheduler_name_is_kept_on_pods() -> None:
    sim = Sim(_with_scheduler("my-sched"), PlannerConfig(gang_scheduler="scheduler-plugins"))
    p = sim.step(at(0))
    by_name = {x["metadata"]["name"]: x["spec"].get("schedulerName") for x in p.create_pods}
    assert by_name == {
        "g-ps-0": "scheduler-plugins-scheduler",
        "g-worker-0": "my-sched",
        "g-worker-1": "my-sched",
    }


def test_user_scheduler_name_is_warned_about_under_gang_scheduling() -> None:
    from kubetrain.jobs.defaulting import default_job
    from kubetrain.webhook.mutate import mutate

    obj = _with_scheduler("my-sched")
    warnings = default_job(obj, gang_scheduling=True).warnings
    assert len(warnings) == 1
    path = "spec.tfReplicaSpecs[Worker].template.spec.schedulerName"
    assert warnings[0].startswith(f'{path}: "my-sched" is kept')
    assert default_job(obj).warnings == []  # no gang scheduler: a scheduler name is unremarkable
    assert default_job(tf(), gang_scheduling=True).warnings == []

    def review(gang: bool) -> list[str]:
        request = review_of(obj, namespace="ns", group="kubetrain.io")
        return list(mutate(request, gang_scheduling=gang).warnings)

    assert review(True) == warnings and review(False) == []
