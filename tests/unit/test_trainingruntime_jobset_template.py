"""The fields of a runtime's JobSet template (`spec.template`) that name the JobSet object
Trainer makes, which kubetrain does not make: `spec.managedBy` (refused unless JobSet's own
controller), `spec.suspend` and `metadata.labels` (admitted with a warning: they change nothing).
docs/behaviour.md §11, "Every field of Trainer's API"."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from admission import review_of
from trainjobs import failed_condition

from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.runtimerules import runtime_warnings, validate_runtime
from kubetrain.webhook.trainer import validate_trainer

from .test_trainplan import RUNTIME, trainjob
from .test_trainplan_jobset_policies import plan

Obj = dict[str, Any]
MANAGED_BY = "spec.template.spec.managedBy"


def runtime(**jobset: Any) -> Obj:
    rt = copy.deepcopy(RUNTIME)
    rt["spec"]["template"]["spec"].update(jobset)
    return rt


def test_a_runtime_handing_its_jobset_to_another_controller_is_refused_naming_the_field() -> None:
    """Under Trainer such a runtime's JobSets are skipped by JobSet's controller (they wait for
    the named one); kubetrain makes no JobSet, and used to run the pods as if the field were
    not there."""
    stored = runtime(managedBy="kueue.x-k8s.io/multikueue")
    errors = validate_runtime(stored)
    assert [str(e) for e in errors] == [
        f'{MANAGED_BY}: Invalid: "kueue.x-k8s.io/multikueue": only "jobset.sigs.k8s.io/jobset-controller" '
        "(or unset): kubetrain runs a TrainJob's pods itself, with no JobSet object for another "
        "controller to manage; a TrainJob's own spec.managedBy hands it to another controller "
        "(kueue.x-k8s.io/multikueue)"
    ]
    response = validate_trainer(review_of(stored))
    assert not response.allowed and MANAGED_BY in response.message and "\n" not in response.message
    # a runtime stored past admission fails its TrainJobs, with no pod made
    resolved, errors = resolve(trainjob(nodes=2), stored)
    assert resolved is None and [e.path for e in errors] == [f"runtime.{MANAGED_BY}"]
    p = plan(trainjob(nodes=2), stored, [])
    cond = failed_condition(p)
    assert p.create_pods == [] and cond is not None
    assert cond["reason"] == "TrainingRuntimeNotSupported"
    assert cond["message"].startswith(f"runtime.{MANAGED_BY}")


@pytest.mark.parametrize("manager", [None, "jobset.sigs.k8s.io/jobset-controller"])
def test_jobsets_own_controller_is_admitted_and_runs(manager: str | None) -> None:
    stored = runtime(managedBy=manager)
    assert validate_runtime(stored) == []
    assert validate_trainer(review_of(stored)).allowed
    resolved, errors = resolve(trainjob(nodes=2), stored)
    assert errors == [] and resolved is not None


def test_the_templates_suspend_and_labels_are_admitted_with_a_warning_each() -> None:
    """Trainer replaces the template's `suspend` with the TrainJob's; its labels label the JobSet
    object only. Both change nothing here, and the user is told so."""
    stored = runtime(suspend=True)
    stored["spec"]["template"]["metadata"] = {"labels": {"team": "vision"}, "annotations": {"a": "b"}}
    assert validate_runtime(stored) == []
    warnings = runtime_warnings(stored)
    assert warnings == [
        "spec.template.spec.suspend: not applied: each TrainJob's own spec.suspend decides (Trainer "
        "replaces this value with it too)",
        "spec.template.metadata.labels: not applied: they label the JobSet object, and kubetrain runs a "
        "TrainJob's pods without one (label the pods in the replicated jobs' pod templates)",
    ]
    response = validate_trainer(review_of(stored))
    assert response.allowed and all(w in response.warnings for w in warnings)
    # the TrainJob, not the template, decides whether it runs
    p = plan(trainjob(nodes=2), stored, [])
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-0", "tj-node-0-1"]
    assert runtime_warnings(runtime()) == []


def test_a_job_templates_own_labels_and_annotations_are_warned_about() -> None:
    """A replicated job's Job template metadata labels the Job object JobSet makes; kubetrain
    reads its ancestor label and JobSet's exclusive-placement annotations (they reach the pods)
    and warns about the rest, which label nothing."""
    stored = runtime()
    meta = stored["spec"]["template"]["spec"]["replicatedJobs"][0]["template"].setdefault("metadata", {})
    meta.setdefault("labels", {})["cost-center"] = "ml"
    meta["annotations"] = {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "topology.kubernetes.io/zone",
        "note": "x",
    }
    path = "spec.template.spec.replicatedJobs[0].template.metadata"
    why = (
        "not applied: it would be on the Job object, and kubetrain creates the replicated job's pods "
        "without one (put it in the pod template's metadata)"
    )
    warnings = runtime_warnings(stored)
    assert f"{path}.labels[cost-center]: {why}" in warnings
    assert f"{path}.annotations[note]: {why}" in warnings
    assert not [w for w in warnings if "trainjob-ancestor-step" in w or "exclusive-topology]" in w]
