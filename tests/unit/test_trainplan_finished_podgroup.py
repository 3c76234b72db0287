"""A finished TrainJob's PodGroup (docs/behaviour.md §11): deleted on `Complete` and `Failed`, as
every kind's is (§7), while the headless Service stays as JobSet keeps it. Kept, it went on
holding its `minResources` in the Volcano queue — and once the finished pods were removed Volcano
turned it from Completed back to Inqueue and reserved the quota again — starving the TrainJobs
that wait in that queue (Kubeflow Trainer issue 4033, Volcano issue 4195)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from trainjobs import UID

from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

from .test_trainplan import NOW, RUNTIME, finished_trainjob, pod, snapshot, trainjob

Obj = dict[str, Any]


def volcano_runtime() -> Obj:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["podGroupPolicy"] = {"volcano": {}}
    return runtime


def pod_group(owner_uid: str = UID) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "tj",
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "name": "tj",
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def gang_plan(job: Obj, pods: list[Obj], group: Obj | None) -> Any:
    runtime = volcano_runtime()
    observed = Observed(
        pods=pods, service={"metadata": {"name": "tj"}}, pod_group=group, extra=[snapshot(job, runtime)]
    )
    return plan_trainjob(job, observed, runtime, NOW, PlannerConfig(gang_scheduler="volcano"))


@pytest.mark.parametrize(("ctype", "phase"), [("Complete", "Succeeded"), ("Failed", "Failed")])
def test_a_finished_trainjob_deletes_its_pod_group_and_keeps_its_service(ctype: str, phase: str) -> None:
    job = finished_trainjob(ctype)
    pods = [pod("tj-node-0-0", phase=phase), pod("tj-node-0-1", phase=phase)]
    p = gang_plan(job, pods, pod_group())
    assert p.delete_pod_group
    assert not p.delete_service  # JobSet keeps its Service; so does the TrainJob
    assert p.create_pod_group is None and p.create_pods == []


def test_a_pod_group_the_trainjob_does_not_control_is_left_alone() -> None:
    job = finished_trainjob()
    p = gang_plan(job, [pod("tj-node-0-0", phase="Succeeded")], pod_group(owner_uid="someone-else"))
    assert not p.delete_pod_group


def test_a_running_trainjob_keeps_its_pod_group() -> None:
    job = trainjob()
    pods = [pod("tj-node-0-0", phase="Running"), pod("tj-node-0-1", phase="Running")]
    p = gang_plan(job, pods, pod_group())
    assert not p.delete_pod_group
