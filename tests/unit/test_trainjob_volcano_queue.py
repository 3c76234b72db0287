"""A TrainJob's Volcano queue, read where Trainer's volcano plugin reads it (docs/behaviour.md §8
"queue", §11): `scheduling.volcano.sh/queue-name` on the runtime's template annotations, with
each runtimePatch's template annotations merged over them in order (Trainer's
`TrainingRuntime.newRuntimeInfo`, `propagationAnnotations`); the TrainJob's own annotation only
when those name none (kubetrain's fallback). An explicitly empty one is refused with Trainer's
message and field path (its volcano plugin's `Validate`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from trainjobs import RUNTIME, trainer_test_runtime

from kubetrain.jobs.trainjob.gang import QUEUE_ANNOTATION, queue_errors, runtime_annotations
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.shape import trainjob_shape
from kubetrain.jobs.trainjob.validate import default_trainjob, validate_trainjob
from kubetrain.operator.jobchildren import build_pod_group
from kubetrain.operator.statusprojection import TRAINER

Obj = dict[str, Any]
QUEUE_PATH = "spec.annotations[scheduling.volcano.sh/queue-name]"


def volcano_runtime(annotations: dict[str, str] | None = None, policy: str = "volcano") -> Obj:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["podGroupPolicy"] = {policy: {}}
    if annotations is not None:
        runtime["spec"]["template"].setdefault("metadata", {})["annotations"] = dict(annotations)
    return runtime


def annotation_patch(manager: str, annotations: dict[str, str]) -> Obj:
    return {
        "manager": manager,
        "trainingRuntimeSpec": {"template": {"metadata": {"annotations": dict(annotations)}}},
    }


def trainjob(own: dict[str, str] | None = None, patches: list[Obj] | None = None) -> Obj:
    job: Obj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "ns", "uid": "u-1"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
    }
    if own is not None:
        job["metadata"]["annotations"] = dict(own)
    if patches is not None:
        job["spec"]["runtimePatches"] = patches
    return default_trainjob(job)


def queue_of(job: Obj, runtime: Obj, gang: str = "volcano") -> str | None:
    resolved, errors = resolve(job, runtime)
    assert resolved is not None, errors
    shape = trainjob_shape(job, resolved, runtime["spec"]["template"]["spec"], TRAINER, gang)
    group = build_pod_group(shape, gang)
    assert group is not None
    queue = group["spec"].get("queue")
    assert queue is None or isinstance(queue, str)
    return queue


def test_the_runtimes_template_annotation_names_the_queue() -> None:
    assert queue_of(trainjob(), volcano_runtime({QUEUE_ANNOTATION: "research"})) == "research"


def test_a_runtime_patch_overrides_the_runtimes_queue_and_the_last_patch_wins() -> None:
    runtime = volcano_runtime({QUEUE_ANNOTATION: "research"})
    one = trainjob(patches=[annotation_patch("a.io/m", {QUEUE_ANNOTATION: "production"})])
    assert queue_of(one, runtime) == "production"
    two = trainjob(
        patches=[
            annotation_patch("a.io/m", {QUEUE_ANNOTATION: "production"}),
            annotation_patch("b.io/m", {QUEUE_ANNOTATION: "urgent"}),
        ]
    )
    assert queue_of(two, runtime) == "urgent"
    # A patch naming no queue leaves the runtime's.
    other = trainjob(patches=[annotation_patch("a.io/m", {"team": "nlp"})])
    assert queue_of(other, runtime) == "research"


def test_the_runtimes_queue_wins_over_the_trainjobs_own_annotation() -> None:
    # Trainer reads only the runtime's (and patches'); kubetrain reads the TrainJob's own
    # annotation only when they name no queue.
    runtime = volcano_runtime({QUEUE_ANNOTATION: "research"})
    assert queue_of(trainjob(own={QUEUE_ANNOTATION: "mine"}), runtime) == "research"
    assert queue_of(trainjob(own={QUEUE_ANNOTATION: "mine"}), volcano_runtime()) == "mine"
    assert queue_of(trainjob(), volcano_runtime()) is None  # Volcano's webhook gives `default`


def test_only_a_volcano_runtime_reads_the_queue() -> None:
    runtime = volcano_runtime({QUEUE_ANNOTATION: "research"}, policy="coscheduling")
    resolved, errors = resolve(trainjob(), runtime)
    assert resolved is not None, errors
    shape = trainjob_shape(trainjob(), resolved, runtime["spec"]["template"]["spec"], TRAINER)
    assert shape.run_policy.scheduling.queue is None
    assert queue_errors(trainjob(), volcano_runtime({QUEUE_ANNOTATION: ""}, policy="coscheduling")) == []


def test_runtime_annotations_merge_the_patches_in_order_and_leave_out_the_trainjobs_own() -> None:
    runtime = volcano_runtime({"a": "runtime", "b": "runtime"})
    job = trainjob(
        own={"c": "own"},
        patches=[annotation_patch("x.io/m", {"b": "first"}), annotation_patch("y.io/m", {"b": "second"})],
    )
    assert runtime_annotations(job, runtime) == {"a": "runtime", "b": "second"}
    resolved, _ = resolve(job, runtime)
    assert resolved is not None and dict(resolved.jobset_annotations) == runtime_annotations(job, runtime)


@pytest.mark.parametrize(
    ("runtime_queue", "patched"),
    [("", None), ("research", ""), (None, "")],
    ids=["runtime-empty", "patch-empties-runtime", "patch-empty"],
)
def test_an_empty_queue_annotation_is_refused_with_trainers_message(
    runtime_queue: str | None, patched: str | None
) -> None:
    runtime = volcano_runtime(None if runtime_queue is None else {QUEUE_ANNOTATION: runtime_queue})
    patches = None if patched is None else [annotation_patch("a.io/m", {QUEUE_ANNOTATION: patched})]
    job = trainjob(patches=patches)
    errors = [e for e in validate_trainjob(job, None, runtime) if e.path == QUEUE_PATH]
    assert [str(e) for e in errors] == [
        f"{QUEUE_PATH}: Invalid: Volcano queue name must not be empty: name a queue, or leave the "
        "annotation out of the runtime's template and the runtimePatches"
    ]
    # On update too, as Trainer's webhook validates both.
    assert QUEUE_PATH in [e.path for e in validate_trainjob(job, job, runtime)]


def test_a_named_or_absent_queue_and_the_trainjobs_own_empty_one_are_admitted() -> None:
    for runtime in (volcano_runtime({QUEUE_ANNOTATION: "research"}), volcano_runtime()):
        assert validate_trainjob(trainjob(), None, runtime) == []
    # Trainer does not read the TrainJob's own annotation, so does not refuse it empty.
    assert validate_trainjob(trainjob(own={QUEUE_ANNOTATION: ""}), None, volcano_runtime()) == []


def priority_of(runtime: Obj, job: Obj | None = None) -> object:
    job = job or trainjob()
    resolved, errors = resolve(job, runtime)
    assert resolved is not None, errors
    shape = trainjob_shape(job, resolved, runtime["spec"]["template"]["spec"], TRAINER, "volcano")
    group = build_pod_group(shape, "volcano")
    assert group is not None
    return group["spec"].get("priorityClassName")


def test_the_pod_templates_priority_class_is_the_pod_groups() -> None:
    # Trainer's volcano plugin `Build`: each replicated job's priorityClassName, the last wins.
    runtime = volcano_runtime()
    assert priority_of(runtime) is None
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][-1]
    node["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    assert priority_of(runtime) == "high"
    # Over several replicated jobs the last that sets one wins, an empty one too (then: none).
    steps = trainer_test_runtime("steps")
    steps["spec"]["podGroupPolicy"] = {"volcano": {}}
    rjobs = steps["spec"]["template"]["spec"]["replicatedJobs"]
    pods = [r["template"]["spec"]["template"]["spec"] for r in rjobs]
    pods[0]["priorityClassName"], pods[1]["priorityClassName"] = "high", "low"
    assert priority_of(steps) == "low"
    pods[2]["priorityClassName"] = ""
    assert priority_of(steps) is None
