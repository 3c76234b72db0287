"""What a job's annotations give its PodGroup (docs/behaviour.md §8):

- Volcano's queue from `scheduling.volcano.sh/queue-name` when `schedulingPolicy.queue` is unset,
  as mpi-operator's `VolcanoCtrl.newPodGroup` and Trainer's volcano plugin read it — without it
  PyTorchJobs and TFJobs named their queue in vain (Volcano issue 3461, Kubeflow Trainer issue
  1377);
- the job's annotations on the PodGroup, as training-operator's `JobController.SyncPodGroup`
  sets them, so Volcano's PodGroup-level settings written on the job (`volcano.sh/preemptable`,
  `sla-waiting-time`, …) take effect (Volcano issue 1901)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica

from kubetrain.operator.jobchildren import build_pod_group
from kubetrain.operator.plan import PlannerConfig
from kubetrain.operator.podgroupsync import pod_group_update
from kubetrain.operator.prepare import prepare_job

QUEUE = "scheduling.volcano.sh/queue-name"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


TYPES = {"MPIJob": ("Launcher", "Worker"), "TFJob": ("PS", "Worker"), "PyTorchJob": ("Master", "Worker")}


def annotated(
    kind: str, annotations: dict[str, str], scheduling: dict[str, Any] | None = None
) -> dict[str, Any]:
    types = TYPES[kind]
    obj = job(
        kind,
        {t: replica(kind, 1) for t in types},
        name="g",
        run_policy={"schedulingPolicy": scheduling} if scheduling is not None else None,
    )
    obj["metadata"]["annotations"] = dict(annotations)
    return obj


def pod_group(obj: dict[str, Any], gang: str = "volcano") -> dict[str, Any]:
    prepared = prepare_job(obj, gang_scheduling=True)
    assert prepared.shape is not None, prepared.errors
    group = build_pod_group(prepared.shape, gang)
    assert group is not None
    return group


@pytest.mark.parametrize("kind", ["MPIJob", "TFJob", "PyTorchJob"])
def test_the_queue_annotation_names_the_volcano_queue(kind: str) -> None:
    group = pod_group(annotated(kind, {QUEUE: "production"}))
    assert group["spec"]["queue"] == "production"


def test_the_scheduling_policy_queue_wins_over_the_annotation() -> None:
    group = pod_group(annotated("MPIJob", {QUEUE: "production"}, scheduling={"queue": "research"}))
    assert group["spec"]["queue"] == "research"


def test_an_empty_annotation_names_no_queue() -> None:
    # No queue field: Volcano's webhook gives the PodGroup its namespace's or the default queue.
    assert "queue" not in pod_group(annotated("TFJob", {QUEUE: ""}))["spec"]
    assert "queue" not in pod_group(annotated("TFJob", {}))["spec"]


def test_scheduler_plugins_has_no_queue() -> None:
    assert "queue" not in pod_group(annotated("TFJob", {QUEUE: "production"}), "scheduler-plugins")["spec"]


@pytest.mark.parametrize("gang", ["volcano", "scheduler-plugins"])
def test_the_pod_group_carries_the_jobs_annotations(gang: str) -> None:
    given = {"volcano.sh/preemptable": "false", "sla-waiting-time": "1h", LAST_APPLIED: '{"kind":"TFJob"}'}
    group = pod_group(annotated("TFJob", given), gang)
    assert group["metadata"]["annotations"] == {"volcano.sh/preemptable": "false", "sla-waiting-time": "1h"}


def test_a_job_without_annotations_gives_a_pod_group_without_them() -> None:
    assert "annotations" not in pod_group(annotated("TFJob", {}))["metadata"]


def test_the_planner_creates_the_pod_group_in_the_named_queue_and_follows_a_changed_annotation() -> None:
    # As mpi-operator syncs the spec newPodGroup computes: the annotation is a source of `queue`
    # like schedulingPolicy.queue, so a changed annotation moves the PodGroup.
    obj = annotated("MPIJob", {QUEUE: "production", "volcano.sh/preemptable": "false"})
    sim = Sim(obj, PlannerConfig(gang_scheduler="volcano"))
    created = sim.step(at(0)).create_pod_group
    assert created is not None
    assert created["spec"]["queue"] == "production"
    assert created["metadata"]["annotations"][QUEUE] == "production"
    assert created["metadata"]["annotations"]["volcano.sh/preemptable"] == "false"
    observed = {**created, "metadata": {**created["metadata"], "resourceVersion": "5"}}
    assert pod_group_update(created, observed) is None
    moved = pod_group(annotated("MPIJob", {QUEUE: "research"}))
    update = pod_group_update(moved, observed)
    assert update is not None and update["spec"]["queue"] == "research"
    # Annotations are the PodGroup's from its creation: the update keeps the observed ones.
    assert update["metadata"]["annotations"]["volcano.sh/preemptable"] == "false"


def test_a_trainjobs_queue_annotation_names_its_volcano_queue() -> None:
    # Trainer reads the queue from the runtime's annotations only; kubetrain falls back to the
    # TrainJob's own when they name none (tests/unit/test_trainjob_volcano_queue.py).
    from .test_trainjob_shape import shape_of
    from .test_trainplan import RUNTIME, trainjob

    runtime = {**RUNTIME, "spec": {**RUNTIME["spec"], "podGroupPolicy": {"volcano": {}}}}
    tj = trainjob(nodes=2)
    tj["metadata"]["annotations"] = {QUEUE: "production"}
    group = build_pod_group(shape_of(tj, runtime), "volcano")
    assert group is not None and group["spec"]["queue"] == "production"
    assert group["metadata"]["annotations"] == {QUEUE: "production"}
