"""A Volcano TrainJob's priorityClassName must name a PriorityClass (docs/behaviour.md §11), as
Trainer's volcano plugin `Validate` refuses it (pkg/runtime/framework/plugins/volcano/
volcano.go): the names looked up (`gang.priority_classes_to_check`), the webhook's reads
(`kube_trainer_reader`: a 404 refuses, any other failure admits with a warning) and its answer
(`validate_trainer`). `kubetrain validate` (offline) does not check the class."""

from __future__ import annotations

import copy
import io
import logging
from typing import Any

import pytest
from admission import review_of
from trainjobs import trainer_test_runtime

from kubetrain.commands._trainervalidate import check_trainer_document
from kubetrain.jobs.trainjob.gang import priority_classes_to_check
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.validate import default_trainjob
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, PRIORITY_CLASSES, ResourceRef
from kubetrain.webhook.trainer import TrainerFacts, validate_trainer
from kubetrain.webhook.trainerreader import kube_trainer_reader

Obj = dict[str, Any]
PATH = "spec.templateSpec.priorityClassName"


def runtime(classes: dict[str, str], policy: str = "volcano") -> Obj:
    """A ClusterTrainingRuntime with a dataset initializer and the trainer, `policy` as its
    podGroupPolicy source, each step of `classes` naming that priorityClassName."""
    rt = trainer_test_runtime(
        "volcano-rt", kind="ClusterTrainingRuntime", steps=("dataset-initializer", "node")
    )
    rt["spec"]["podGroupPolicy"] = {policy: {}}
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        if rjob["name"] in classes:
            rjob["template"]["spec"]["template"]["spec"]["priorityClassName"] = classes[rjob["name"]]
    return rt


def trainjob(name: str = "tj") -> Obj:
    return default_trainjob(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "ns", "uid": "u-1"},
            "spec": {"runtimeRef": {"name": "volcano-rt"}, "trainer": {"numNodes": 2}},
        }
    )


def checked(classes: dict[str, str], policy: str = "volcano") -> list[str]:
    resolved, errors = resolve(trainjob(), runtime(classes, policy))
    assert resolved is not None, errors
    return priority_classes_to_check(resolved)


def test_each_named_class_is_looked_up_once_in_step_order() -> None:
    assert checked({"dataset-initializer": "batch", "node": "training"}) == ["batch", "training"]
    assert checked({"dataset-initializer": "training", "node": "training"}) == ["training"]


def test_system_classes_and_an_empty_name_are_not_looked_up() -> None:
    assert checked({"node": "system-cluster-critical"}) == []
    assert checked({"node": "system-node-critical"}) == []
    assert checked({"node": ""}) == []
    assert checked({}) == []


def test_a_system_class_on_an_earlier_step_does_not_excuse_a_later_one() -> None:
    # Trainer's loop returns at the system name; kubetrain checks every replicated job (Decision).
    assert checked({"dataset-initializer": "system-node-critical", "node": "missing"}) == ["missing"]


def test_only_a_volcano_runtime_has_its_classes_checked() -> None:
    assert checked({"node": "training"}, policy="coscheduling") == []


def answer(facts: TrainerFacts, operation: str = "CREATE") -> Any:
    job = trainjob()
    old = None
    if operation == "UPDATE":
        old = copy.deepcopy(job)
        job = copy.deepcopy(job)
        job["spec"]["suspend"] = not job["spec"].get("suspend", False)
    return validate_trainer(review_of(job, operation, old), facts)


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_missing_class_is_refused_with_trainers_path_and_message(operation: str) -> None:
    rt = runtime({"node": "gone"})
    response = answer(TrainerFacts(runtime=rt, missing_priority_classes=["gone"]), operation)
    assert not response.allowed
    assert response.status_code == 422
    assert (
        f'{PATH}: Invalid: "gone": PriorityClass "gone" doesn\'t exist: '
        'priorityclasses.scheduling.k8s.io "gone" not found'
    ) in response.message


def test_a_class_that_could_not_be_read_is_admitted_with_a_warning() -> None:
    rt = runtime({"node": "secret"})
    response = answer(TrainerFacts(runtime=rt, unread_priority_classes={"secret": "403 Forbidden"}))
    assert response.allowed
    assert len(response.warnings) == 1
    assert 'PriorityClass "secret" not checked' in response.warnings[0]
    assert "403 Forbidden" in response.warnings[0]


def test_existing_classes_are_admitted_without_a_warning() -> None:
    response = answer(TrainerFacts(runtime=runtime({"node": "training"})))
    assert response.allowed and response.warnings == []


class FakeKube:
    """`get` of the runtime and of PriorityClasses: each class name answers as `classes` says
    (an ApiError status to raise, or None: it exists); every GET is recorded."""

    def __init__(self, rt: Obj, classes: dict[str, int | None]) -> None:
        self.rt, self.classes = rt, classes
        self.gets: list[tuple[str, str]] = []

    async def get(self, ref: ResourceRef, namespace: str | None, name: str) -> Obj:
        self.gets.append((ref.plural, name))
        if ref == CLUSTER_TRAINING_RUNTIMES:
            return self.rt
        assert ref == PRIORITY_CLASSES and namespace is None
        status = self.classes[name]
        if status is not None:
            raise ApiError(
                status, {404: "NotFound", 403: "Forbidden", 0: "ClientConnectorError"}[status], name
            )
        return {"metadata": {"name": name}, "value": 1000}


async def read(rt: Obj, classes: dict[str, int | None]) -> tuple[TrainerFacts, FakeKube]:
    kube = FakeKube(rt, classes)
    facts = await kube_trainer_reader(kube)(review_of(trainjob()))  # type: ignore[arg-type]
    return facts, kube


async def test_the_reader_gets_each_class_and_sorts_404_from_unreadable() -> None:
    rt = runtime({"dataset-initializer": "gone", "node": "secret"})
    facts, kube = await read(rt, {"gone": 404, "secret": 403})
    assert facts.runtime == rt
    assert facts.missing_priority_classes == ["gone"]
    assert facts.unread_priority_classes == {"secret": "403 Forbidden"}
    assert kube.gets == [
        ("clustertrainingruntimes", "volcano-rt"),
        ("priorityclasses", "gone"),
        ("priorityclasses", "secret"),
    ]


async def test_a_forbidden_read_is_logged_once_per_reader(caplog: pytest.LogCaptureFixture) -> None:
    """An older chart without the RBAC: the operator's log says so once, not at every review."""
    kube = FakeKube(runtime({"node": "secret"}), {"secret": 403})
    reader = kube_trainer_reader(kube)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="kubetrain.webhook.trainerreader"):
        for _ in range(3):
            facts = await reader(review_of(trainjob()))
            assert facts.unread_priority_classes == {"secret": "403 Forbidden"}
    [record] = [r for r in caplog.records if r.name == "kubetrain.webhook.trainerreader"]
    message = record.getMessage()
    assert "403 Forbidden" in message and "priorityclasses.scheduling.k8s.io" in message


async def test_an_unreachable_api_server_leaves_the_class_unread_not_missing() -> None:
    facts, _ = await read(runtime({"node": "training"}), {"training": 0})
    assert facts.missing_priority_classes == []
    assert facts.unread_priority_classes == {"training": "no answer: ClientConnectorError"}
    assert validate_trainer(review_of(trainjob()), facts).allowed


async def test_the_reader_gets_no_class_for_a_system_one_or_a_coscheduling_runtime() -> None:
    facts, kube = await read(runtime({"node": "system-cluster-critical"}), {})
    assert kube.gets == [("clustertrainingruntimes", "volcano-rt")]
    assert facts.missing_priority_classes == [] and facts.unread_priority_classes == {}
    _, kube = await read(runtime({"node": "gone"}, policy="coscheduling"), {"gone": 404})
    assert kube.gets == [("clustertrainingruntimes", "volcano-rt")]


def test_offline_validate_does_not_refuse_a_class_it_cannot_read() -> None:
    report = io.StringIO()
    rt = runtime({"node": "no-such-class"})
    runtimes = {("ClusterTrainingRuntime", "volcano-rt"): rt}
    ok, _ = check_trainer_document(trainjob(), "job.yaml", report, runtimes)
    assert ok, report.getvalue()
    assert "priorityClassName" not in report.getvalue()
