"""A kubeflow.org MPIJob's pods carry the labels of the operator whose API version its author
wrote (docs/behaviour.md §4, MPIJob "Labels"): the mutating webhook records requestKind's version
in `kubetrain.io/created-api-version` on CREATE (a served value the client wrote is kept) and
keeps it on UPDATE (a dropped annotation is
put back, a changed or added one refused by validation); v1 jobs get training-operator v1.9's
labels (the Launcher `job-role: master`, what the Kubeflow v1 SDK's get_job_logs selects),
v2beta1 jobs and jobs without the annotation mpi-operator's. The conversion webhook keeps the
annotation through both directions."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from kubetrain.frameworks.mpi import V1_WARNING
from kubetrain.frameworks.mpiconversion import to_v1, to_v2beta1
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.desired import desired_children
from kubetrain.operator.prepare import prepare_job
from kubetrain.webhook.mutate import mutate
from kubetrain.webhook.review import parse_review, request_review
from kubetrain.webhook.validate import validate

Obj = dict[str, Any]
KEY = "kubetrain.io/created-api-version"
PATH = f"metadata.annotations[{KEY}]"
KF = "training.kubeflow.org/"
V1_EXAMPLE = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "training-operator-mpi"
    / "examples"
    / "mpi"
    / "tensorflow-mnist.yaml"
)


def mpijob(annotations: dict[str, str] | None = None, *, workers: int = 2, **spec: Any) -> Obj:
    """An MPIJob as the webhooks and the controller see it: at kubeflow.org/v2beta1."""
    tmpl = {"spec": {"containers": [{"name": "mpi", "image": "mpi-image"}]}}
    meta: Obj = {"name": "pi", "namespace": "ns", "uid": "uid-1", "generation": 1}
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": meta,
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"template": copy.deepcopy(tmpl)},
                "Worker": {"replicas": workers, "template": copy.deepcopy(tmpl)},
            },
            **spec,
        },
    }


def admitted(obj: Obj, *, request_version: str = "", old: Obj | None = None) -> tuple[Obj, list[str]]:
    """The object the mutating webhook's patch makes of `obj`, and its warnings."""
    op = "CREATE" if old is None else "UPDATE"
    review = request_review(obj, operation=op, old=old, request_version=request_version)
    response = mutate(parse_review(review))
    assert response.allowed
    return jsonpatch.apply_patch(obj, response.patch or []), response.warnings


def validated(obj: Obj, *, old: Obj | None = None, request_version: str = "") -> Any:
    op = "CREATE" if old is None else "UPDATE"
    return validate(parse_review(request_review(obj, operation=op, old=old, request_version=request_version)))


def kubeflow_labels(obj: Obj) -> dict[str, dict[str, str]]:
    """Pod name → its training.kubeflow.org labels, as the controller creates the pods."""
    prepared = prepare_job(default_job(obj).obj)
    assert prepared.shape is not None, prepared.errors
    pods = [c for c in desired_children(prepared.shape).all() if c["kind"] == "Pod"]
    return {
        p["metadata"]["name"]: {
            k[len(KF) :]: v for k, v in p["metadata"]["labels"].items() if k.startswith(KF)
        }
        for p in pods
    }


# --- which labels ---------------------------------------------------------------------------------


def test_created_at_v1_gets_training_operator_labels() -> None:
    """training-operator v1.9 (pkg/controller.v1/mpi): GenLabels (operator-name
    mpijob-controller, job-name) + replica-type; newLauncher adds job-role master (IsMasterRole),
    getOrCreateWorker the replica-index — the Launcher has none, no Worker has a job-role."""
    labels = kubeflow_labels(mpijob({KEY: "kubeflow.org/v1"}))
    common = {"operator-name": "mpijob-controller", "job-name": "pi"}
    assert labels == {
        "pi-launcher-0": {**common, "replica-type": "launcher", "job-role": "master"},
        "pi-worker-0": {**common, "replica-type": "worker", "replica-index": "0"},
        "pi-worker-1": {**common, "replica-type": "worker", "replica-index": "1"},
    }


@pytest.mark.parametrize(
    "annotations", [{KEY: "kubeflow.org/v2beta1"}, None], ids=["v2beta1", "no-annotation"]
)
def test_created_at_v2beta1_or_unrecorded_gets_mpi_operator_labels(
    annotations: dict[str, str] | None,
) -> None:
    labels = kubeflow_labels(mpijob(annotations))
    common = {"operator-name": "mpi-operator", "job-name": "pi"}
    assert labels == {
        "pi-launcher-0": {**common, "replica-type": "launcher", "job-role": "launcher"},
        "pi-worker-0": {**common, "replica-type": "worker", "job-role": "worker", "replica-index": "0"},
        "pi-worker-1": {**common, "replica-type": "worker", "job-role": "worker", "replica-index": "1"},
    }


def test_v1_convention_ignores_run_launcher_as_worker() -> None:
    """training-operator v1 has no runLauncherAsWorker: its Workers keep their own index."""
    labels = kubeflow_labels(mpijob({KEY: "kubeflow.org/v1"}, runLauncherAsWorker=True))
    assert "replica-index" not in labels["pi-launcher-0"]
    assert labels["pi-worker-0"]["replica-index"] == "0"


# --- recorded at CREATE ---------------------------------------------------------------------------


def test_create_records_the_version_the_client_wrote() -> None:
    as_v1, warnings = admitted(mpijob(), request_version="v1")
    assert as_v1["metadata"]["annotations"][KEY] == "kubeflow.org/v1"
    assert not any(KEY in w for w in warnings)
    as_v2, _ = admitted(mpijob(), request_version="v2beta1")
    assert as_v2["metadata"]["annotations"][KEY] == "kubeflow.org/v2beta1"


def test_create_without_request_kind_records_the_version_the_webhook_is_called_at() -> None:
    review = request_review(mpijob())
    del review["request"]["requestKind"]
    response = mutate(parse_review(review))
    obj = jsonpatch.apply_patch(mpijob(), response.patch or [])
    assert obj["metadata"]["annotations"][KEY] == "kubeflow.org/v2beta1"


def test_create_keeps_a_served_value_the_client_wrote_with_a_warning() -> None:
    """A job exported with `kubectl get -o yaml` (MPIJobs read at v1, the CRD's preferred
    version) and created again keeps the version recorded at its first creation."""
    obj, warnings = admitted(mpijob({KEY: "kubeflow.org/v2beta1", "team": "hpc"}), request_version="v1")
    assert obj["metadata"]["annotations"] == {KEY: "kubeflow.org/v2beta1", "team": "hpc"}
    assert warnings == [
        f'{PATH} is "kubeflow.org/v2beta1": the job\'s pods get the labels of kubeflow.org/v2beta1 '
        "although it is created at kubeflow.org/v1"
    ]
    assert kubeflow_labels(obj)["pi-launcher-0"]["job-role"] == "launcher"
    same, quiet = admitted(mpijob({KEY: "kubeflow.org/v1"}), request_version="v1")
    assert same["metadata"]["annotations"][KEY] == "kubeflow.org/v1" and not any(KEY in w for w in quiet)


def test_create_with_a_value_naming_no_served_version_is_refused() -> None:
    obj, _ = admitted(mpijob({KEY: "v1"}), request_version="v1")
    response = validated(obj, request_version="v1")
    assert not response.allowed
    assert (
        f'{PATH}: NotSupported: "v1" is not supported: must be one of '
        '"kubeflow.org/v2beta1", "kubeflow.org/v1"' in response.message
    )


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("kubetrain.io/v1", "MPIJob"), ("kubeflow.org/v1", "TFJob")],
    ids=["kubetrain.io", "tfjob"],
)
def test_kinds_served_at_one_version_record_nothing(api_version: str, kind: str) -> None:
    obj = mpijob()
    obj["apiVersion"], obj["kind"] = api_version, kind
    if kind == "TFJob":
        obj["spec"] = {"tfReplicaSpecs": {"Worker": obj["spec"]["mpiReplicaSpecs"]["Worker"]}}
    out, _ = admitted(obj)
    assert KEY not in (out["metadata"].get("annotations") or {})


# --- kept on UPDATE -------------------------------------------------------------------------------


def stored(version: str) -> Obj:
    obj, _ = admitted(mpijob(), request_version=version)
    return obj


@pytest.mark.parametrize("client_version", ["v1", "v2beta1"])
def test_update_that_drops_the_annotation_gets_it_back(client_version: str) -> None:
    """`kubectl replace -f` or a server-side apply of the original manifest drops what the webhook
    added: the stored value comes back, whatever version the update is written at."""
    old = stored("v1")
    new = copy.deepcopy(old)
    del new["metadata"]["annotations"][KEY]
    new["metadata"]["labels"] = {"team": "hpc"}
    out, _ = admitted(new, old=old, request_version=client_version)
    assert out["metadata"]["annotations"][KEY] == "kubeflow.org/v1"
    assert validated(out, old=old).allowed


def test_update_at_another_version_keeps_the_recorded_one() -> None:
    """Kueue writes MPIJobs at v2beta1: an update of a v1-created job does not re-record."""
    old = stored("v1")
    new = copy.deepcopy(old)
    new["spec"]["runPolicy"] = {**new["spec"].get("runPolicy", {}), "suspend": True}
    out, _ = admitted(new, old=old, request_version="v2beta1")
    assert out["metadata"]["annotations"][KEY] == "kubeflow.org/v1"
    assert validated(out, old=old, request_version="v2beta1").allowed


@pytest.mark.parametrize("spec_change", [False, True], ids=["metadata-only", "with-spec-change"])
def test_update_changing_the_annotation_is_refused(spec_change: bool) -> None:
    old = stored("v1")
    new = copy.deepcopy(old)
    new["metadata"]["annotations"][KEY] = "kubeflow.org/v2beta1"
    if spec_change:
        new["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {"labels": {"x": "y"}}
    out, _ = admitted(new, old=old)
    assert out["metadata"]["annotations"][KEY] == "kubeflow.org/v2beta1"  # not silently undone
    response = validated(out, old=old)
    assert not response.allowed
    assert f'{PATH}: Forbidden: is immutable (was "kubeflow.org/v1")' in response.message


def test_update_adding_the_annotation_to_a_job_stored_without_it_is_refused() -> None:
    """A job created with the webhooks off (or by an older kubetrain) keeps mpi-operator's
    labels: its running pods carry them, so an update may not start another convention."""
    old = mpijob()
    new = mpijob({KEY: "kubeflow.org/v1"})
    out, _ = admitted(new, old=old, request_version="v1")
    response = validated(out, old=old)
    assert not response.allowed
    assert f"{PATH}: Forbidden: is immutable (was absent)" in response.message
    # ...and an update leaving it absent is fine.
    assert validated(admitted(mpijob({"team": "hpc"}), old=old)[0], old=old).allowed


# --- a value stored without the webhook -----------------------------------------------------------


def test_a_stored_value_that_names_no_served_version_is_invalid() -> None:
    result = validate_job(default_job(mpijob({KEY: "kubeflow.org/v3"})).obj)
    assert [str(e) for e in result.errors] == [
        f'{PATH}: NotSupported: "kubeflow.org/v3" is not supported: '
        'must be one of "kubeflow.org/v2beta1", "kubeflow.org/v1"'
    ]
    prepared = prepare_job(default_job(mpijob({KEY: "kubeflow.org/v3"})).obj)
    assert prepared.shape is None and any(PATH in e for e in prepared.errors)


# --- conversion and the v1 path end to end ----------------------------------------------------------


@pytest.mark.parametrize("value", ["kubeflow.org/v1", "kubeflow.org/v2beta1"])
def test_conversion_keeps_the_annotation_both_ways(value: str) -> None:
    job = mpijob({KEY: value})
    as_v1 = to_v1(job)
    assert as_v1["metadata"]["annotations"][KEY] == value
    assert to_v2beta1(as_v1) == job


def test_training_operator_example_written_at_v1_runs_with_its_labels() -> None:
    """A v1 manifest as the API server hands it to the webhooks (converted to v2beta1,
    requestKind v1): recorded, warned about SSH delivery only, Launcher job-role master."""
    manifest = yaml.safe_load(V1_EXAMPLE.read_text())
    manifest["metadata"].update(namespace="ns", uid="uid-1")
    converted = to_v2beta1(manifest)
    obj, _ = admitted(converted, request_version="v1")
    response = validated(obj, request_version="v1")
    assert response.allowed and response.warnings[0] == V1_WARNING
    assert "is_master=False" not in V1_WARNING and "job-role" not in V1_WARNING  # nothing to work around
    name = manifest["metadata"]["name"]
    labels = kubeflow_labels(obj)
    assert labels[f"{name}-launcher-0"]["job-role"] == "master"
    assert to_v1(obj)["metadata"]["annotations"][KEY] == "kubeflow.org/v1"
