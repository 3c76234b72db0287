"""Values the job pipeline settles once, at the stage that owns them, and the later stages take
(docs/architecture.md, "One form per stage"): the apiVersions a kind is created at (the parse
stage's `JobDraft.served_versions`), checked by validation against the created-api-version
annotation as the parse stage read it; the framework's gates (`Defaulted.gates`), read once from
the defaulted spec by defaulting, which the gang size and the lay-out take; the run policy's
`podFailurePolicy`, read by the parse stage (`JobDraft.pod_failure_policy`), defaulted by
defaulting and checked by validation as defaulted; the start-deadline annotation's problem,
found by the parse stage (`JobAnnotations.start_deadline_errors`); the API group of the job's
apiVersion (`JobDraft.group`), from which with the created-api-version annotation the lay-out's
status projection is chosen."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.mpilabels import mpi_operator_convention
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.defaulting import default_v1
from kubetrain.jobs.jobdraft import read_draft, read_job
from kubetrain.jobs.parse import read_typed
from kubetrain.jobs.shape import READY, DependsOn
from kubetrain.jobs.validation import validate_job, validate_v1
from kubetrain.operator.prepare import prepare_job
from kubetrain.operator.statusprojection import KUBEFLOW, MPI_OPERATOR
from tests.jobs import job

Obj = dict[str, Any]
KEY = "kubetrain.io/created-api-version"
PATH = f"metadata.annotations[{KEY}]"
SERVED = ("kubeflow.org/v2beta1", "kubeflow.org/v1")
START = "kubetrain.io/start-deadline-seconds"
START_PATH = f"metadata.annotations[{START}]"


def mpijob(
    annotations: dict[str, str] | None = None, *, api_version: str = "kubeflow.org/v2beta1", **spec: Any
) -> Obj:
    tmpl = {"spec": {"containers": [{"name": "mpi", "image": "mpi-image"}]}}
    meta: Obj = {"name": "pi", "namespace": "ns"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": api_version,
        "kind": "MPIJob",
        "metadata": meta,
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"template": copy.deepcopy(tmpl)},
                "Worker": {"replicas": 2, "template": copy.deepcopy(tmpl)},
            },
            **spec,
        },
    }


def created_version_errors(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors if str(e).startswith(PATH)]


def test_the_parse_stage_settles_the_versions_a_kind_is_created_at() -> None:
    # MPIJob in kubeflow.org: stored at v2beta1, served at v1 through the conversion webhook.
    assert read_job(mpijob()).served_versions == SERVED
    assert read_draft(mpijob()).served_versions == SERVED
    # Served at one version: the annotation means nothing there.
    assert read_job(mpijob(api_version="kubetrain.io/v1")).served_versions == ()
    tfjob = job("TFJob", replicas={"Worker": 1}, api_version="kubeflow.org/v1")
    assert read_job(tfjob).served_versions == ()
    assert read_job({"apiVersion": "kubeflow.org/v1", "kind": "SparkJob"}).served_versions == ()
    assert read_draft({"apiVersion": "kubeflow.org/v1", "kind": 7}).served_versions == ()


def test_the_created_version_annotation_is_read_once_absent_or_as_written() -> None:
    assert read_job(mpijob()).annotations.created_api_version is None
    assert read_job(mpijob({})).annotations.created_api_version is None
    assert read_job(mpijob({KEY: "kubeflow.org/v1"})).annotations.created_api_version == "kubeflow.org/v1"
    assert read_job(mpijob({KEY: "kubeflow.org/v3"})).annotations.created_api_version == "kubeflow.org/v3"


def test_an_absent_or_served_created_version_is_valid_another_is_refused_naming_the_served_ones() -> None:
    assert created_version_errors(prepare_job(mpijob()).errors) == []
    for served in SERVED:
        assert created_version_errors(prepare_job(mpijob({KEY: served})).errors) == []
    refused = created_version_errors(prepare_job(mpijob({KEY: "kubeflow.org/v3"})).errors)
    assert refused == [
        f'{PATH}: NotSupported: "kubeflow.org/v3" is not supported: must be one of '
        '"kubeflow.org/v2beta1", "kubeflow.org/v1"'
    ]
    # The webhook's edge reads the same way.
    assert created_version_errors(validate_job(mpijob({KEY: "kubeflow.org/v3"})).errors) == refused
    # On a kind served at one version any value is left as written.
    one = mpijob({KEY: "kubeflow.org/v3"}, api_version="kubetrain.io/v1")
    assert created_version_errors(prepare_job(one).errors) == []


def test_validation_checks_the_annotation_against_the_served_versions_the_parse_stage_settled() -> None:
    draft = read_draft(mpijob({KEY: "kubeflow.org/v3"}))
    assert created_version_errors(validate_v1(draft, read_typed(draft)).errors)
    # Validation takes the draft's settled values: it does not read the job's kind again.
    unserved = dataclasses.replace(draft, served_versions=())
    assert created_version_errors(validate_v1(unserved, read_typed(unserved)).errors) == []
    other = dataclasses.replace(draft, served_versions=("kubeflow.org/v3",))
    assert created_version_errors(validate_v1(other, read_typed(other)).errors) == []


def test_defaulting_reads_the_gates_once_for_the_gang_size_and_the_lay_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mpi = get_framework("MPIJob")
    assert mpi is not None
    calls: list[Any] = []
    spec_gates = type(mpi).spec_gates

    def counted(self: Framework, spec: Any) -> Any:
        calls.append(spec)
        return spec_gates(self, spec)

    monkeypatch.setattr(type(mpi), "spec_gates", counted)
    waiting = mpijob(launcherCreationPolicy="WaitForWorkersReady")
    defaulted = default_v1(read_job(waiting), gang_scheduling=True)
    assert defaulted.gates == {"Launcher": ("Worker",)}
    # The gang leaves the gated Launcher out: its pod waits for every Worker to be Ready.
    assert defaulted.obj["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2
    calls.clear()
    prepared = prepare_job(waiting, gang_scheduling=True)
    assert len(calls) == 1  # defaulting's read, which the lay-out takes
    assert prepared.shape is not None
    assert prepared.shape.groups["Launcher"].depends_on == (DependsOn("Worker", READY),)
    assert prepared.shape.groups["Worker"].depends_on == ()
    # The default policy (AtStartup) gates nothing: the gang counts every pod.
    at_start = prepare_job(mpijob(), gang_scheduling=True)
    assert at_start.shape is not None
    assert all(g.depends_on == () for g in at_start.shape.groups.values())
    assert at_start.shape.run_policy.scheduling.min_available == 3


def test_the_pod_failure_policy_is_read_at_parse_defaulted_once_and_validated_as_defaulted() -> None:
    rules: list[Obj] = [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
    ]
    obj = job("TFJob", replicas={"Worker": 2}, run_policy={"podFailurePolicy": {"rules": rules}})
    before = copy.deepcopy(obj)
    draft = read_job(obj)
    assert draft.pod_failure_policy == {"rules": rules}
    defaulted = default_v1(draft)
    assert obj == before  # the stored job is never changed
    expected = {
        "rules": [{**rules[0], "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}, rules[1]]
    }
    assert defaulted.obj["spec"]["runPolicy"]["podFailurePolicy"] == expected
    assert defaulted.draft is not None and defaulted.draft.pod_failure_policy == expected
    assert prepare_job(obj).valid
    # Absent, or a run policy that is not an object: nothing to default or check.
    assert read_job(job("TFJob", replicas={"Worker": 1})).pod_failure_policy is None
    assert read_draft({"kind": "TFJob", "spec": {"runPolicy": "fast"}}).pod_failure_policy is None
    # Validation checks the policy the draft holds: exit code 0 under `In` is refused at its path.
    bad = copy.deepcopy(obj)
    bad["spec"]["runPolicy"]["podFailurePolicy"]["rules"][1]["onExitCodes"]["values"] = [0]
    path = "spec.runPolicy.podFailurePolicy.rules[1].onExitCodes.values[0]"
    assert f"{path}: Invalid: must not be 0 for the In operator" in prepare_job(bad).errors
    unchecked = dataclasses.replace(read_draft(bad), pod_failure_policy=None)
    assert not any(e.path == path for e in validate_v1(unchecked, read_typed(unchecked)).errors)


@pytest.mark.parametrize(("value", "seconds"), [(None, None), ("600", 600), ("soon", None), ("0", None)])
def test_the_start_deadline_annotation_and_its_problem_are_read_at_parse(
    value: str | None, seconds: int | None
) -> None:
    obj = job("TFJob", replicas={"Worker": 1})
    if value is not None:
        obj["metadata"]["annotations"] = {START: value}
    draft = read_job(obj)
    assert draft.annotations.start_deadline == seconds
    refused = value is not None and seconds is None
    expected = [
        f"{START_PATH}: Invalid: must be a positive integer number of seconds, not {json.dumps(value)}"
    ]
    assert [str(e) for e in draft.annotations.start_deadline_errors] == (expected if refused else [])
    assert [e for e in prepare_job(obj).errors if e.startswith(START_PATH)] == (expected if refused else [])
    # Validation reports the problem the parse stage found; it does not read the annotation again.
    quiet = dataclasses.replace(
        draft, annotations=dataclasses.replace(draft.annotations, start_deadline_errors=())
    )
    assert not any(e.path == START_PATH for e in validate_v1(quiet, read_typed(quiet)).errors)


def test_the_status_projection_is_chosen_from_the_group_and_annotation_the_parse_stage_read() -> None:
    assert read_job(mpijob()).group == "kubeflow.org"
    assert read_job(mpijob(api_version="kubetrain.io/v1")).group == "kubetrain.io"
    assert read_draft({"apiVersion": "v1", "kind": "TFJob"}).group == ""
    cases = [
        (mpijob(), MPI_OPERATOR),  # written as mpi-operator's: its JobStatus
        (mpijob({KEY: "kubeflow.org/v2beta1"}), MPI_OPERATOR),
        (mpijob({KEY: "kubeflow.org/v1"}), KUBEFLOW),  # created at training-operator's version
        (mpijob(api_version="kubetrain.io/v1"), KUBEFLOW),
        (job("TFJob", replicas={"Worker": 1}, api_version="kubeflow.org/v1"), KUBEFLOW),
    ]
    for obj, projection in cases:
        shape = prepare_job(obj).shape
        assert shape is not None and shape.status is projection
        # The same decision as the one the controller's other readers take from the stored job.
        assert mpi_operator_convention(obj) == (projection is MPI_OPERATOR)
