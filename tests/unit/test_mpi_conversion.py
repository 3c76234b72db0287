"""MPIJob conversion between kubeflow.org/v1 (training-operator) and kubeflow.org/v2beta1
(mpi-operator, storage) and the ConversionReview the CRD conversion webhook answers
(kubetrain.frameworks.mpiconversion; docs/behaviour.md §1): lossless round trips and determinism over
generated MPIJobs (hypothesis), the apiextensions.k8s.io/v1 review semantics, and
training-operator's own v1 examples converting to valid v2beta1 jobs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrain.frameworks.mpiconversion import (
    ANNOTATION_V1_FIELDS,
    ANNOTATION_V2BETA1_FIELDS,
    V1,
    V2BETA1,
    BadConversionReview,
    answer,
    conversion_review,
    convert,
    to_v1,
    to_v2beta1,
)
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job

Obj = dict[str, Any]
V1_EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "training-operator-mpi" / "examples" / "mpi"

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
small = st.integers(min_value=0, max_value=8)
clean = st.sampled_from(["All", "Running", "None"])
user_annotations = st.dictionaries(
    st.sampled_from(["a", "team", "kubetrain.io/other", "kubetrain.io/created-api-version", "example.com/x"]),
    names,
    min_size=1,
    max_size=3,
)


@st.composite
def metadata(draw: st.DrawFn) -> Obj:
    meta: Obj = {"name": draw(names), "namespace": draw(names), "uid": draw(names), "resourceVersion": "7"}
    if draw(st.booleans()):
        meta["labels"] = draw(st.dictionaries(names, names, max_size=3))
    if draw(st.booleans()):
        meta["annotations"] = draw(user_annotations)
    return meta


@st.composite
def replica(draw: st.DrawFn) -> Obj:
    container: Obj = {"name": draw(names), "image": "mpioperator/mpi-pi:openmpi"}
    if draw(st.booleans()):
        container["command"] = ["mpirun", "-n", str(draw(small))]
    spec: Obj = {"template": {"spec": {"containers": [container]}}}
    if draw(st.booleans()):
        spec["replicas"] = draw(small)
    if draw(st.booleans()):
        spec["restartPolicy"] = draw(st.sampled_from(["Never", "OnFailure", "Always", "ExitCode"]))
    return spec


@st.composite
def run_policy(draw: st.DrawFn) -> Obj:
    policy: Obj = {}
    if draw(st.booleans()):
        policy["cleanPodPolicy"] = draw(clean)
    if draw(st.booleans()):
        policy["backoffLimit"] = draw(small)
    if draw(st.booleans()):
        policy["suspend"] = draw(st.booleans())
    if draw(st.booleans()):
        policy["schedulingPolicy"] = {"minAvailable": draw(small), "queue": draw(names)}
    return policy


@st.composite
def status(draw: st.DrawFn) -> Obj:
    return {
        "conditions": [{"type": "Created", "status": "True", "reason": "MPIJobCreated"}],
        "replicaStatuses": {"Launcher": {"active": draw(small)}, "Worker": {"active": draw(small)}},
    }


@st.composite
def mpijob(draw: st.DrawFn, version: str) -> Obj:
    spec: Obj = {"mpiReplicaSpecs": {"Launcher": draw(replica())}}
    if draw(st.booleans()):
        spec["mpiReplicaSpecs"]["Worker"] = draw(replica())
    if draw(st.booleans()):
        spec["slotsPerWorker"] = draw(small)
    if draw(st.booleans()):
        spec["runPolicy"] = draw(run_policy())
    if version == V1:
        if draw(st.booleans()):
            spec["cleanPodPolicy"] = draw(clean)
        if draw(st.booleans()):
            spec["mainContainer"] = draw(names)
    else:
        if draw(st.booleans()):
            spec["runLauncherAsWorker"] = draw(st.booleans())
        if draw(st.booleans()):
            spec["mpiImplementation"] = draw(st.sampled_from(["OpenMPI", "Intel", "MPICH"]))
        if draw(st.booleans()):
            spec["sshAuthMountPath"] = "/home/" + draw(names)
        if draw(st.booleans()):
            spec["launcherCreationPolicy"] = draw(st.sampled_from(["AtStartup", "WaitForWorkersReady"]))
    obj: Obj = {"apiVersion": version, "kind": "MPIJob", "metadata": draw(metadata()), "spec": spec}
    if draw(st.booleans()):
        obj["status"] = draw(status())
    return obj


@settings(max_examples=300, deadline=None)
@given(mpijob(V1))
def test_v1_round_trips_through_v2beta1(job: Obj) -> None:
    original = copy.deepcopy(job)
    there = to_v2beta1(job)
    assert job == original  # the input is not changed
    assert there["apiVersion"] == V2BETA1
    assert not {"mainContainer", "cleanPodPolicy"} & set(there["spec"])
    assert to_v1(there) == original


@settings(max_examples=300, deadline=None)
@given(mpijob(V2BETA1))
def test_v2beta1_round_trips_through_v1(job: Obj) -> None:
    original = copy.deepcopy(job)
    there = to_v1(job)
    assert there["apiVersion"] == V1
    assert not {
        "runLauncherAsWorker",
        "mpiImplementation",
        "sshAuthMountPath",
        "launcherCreationPolicy",
    } & set(there["spec"])
    assert to_v2beta1(there) == original


@settings(max_examples=200, deadline=None)
@given(st.one_of(mpijob(V1), mpijob(V2BETA1)), st.sampled_from([V1, V2BETA1]))
def test_conversion_is_deterministic_and_keeps_metadata(job: Obj, desired: str) -> None:
    first, second = convert(job, desired), convert(copy.deepcopy(job), desired)
    assert json.dumps(first) == json.dumps(second)  # same bytes, key order included
    assert first["apiVersion"] == desired and first["kind"] == "MPIJob"
    # Only annotations may differ (the API server refuses any other metadata change).
    strip = lambda m: {k: v for k, v in m.items() if k != "annotations"}  # noqa: E731
    assert strip(first["metadata"]) == strip(job["metadata"])
    own = {ANNOTATION_V1_FIELDS, ANNOTATION_V2BETA1_FIELDS}
    user = {k: v for k, v in (job["metadata"].get("annotations") or {}).items() if k not in own}
    assert {k: v for k, v in (first["metadata"].get("annotations") or {}).items() if k not in own} == user
    assert first.get("status") == job.get("status")


def test_spec_level_clean_pod_policy_becomes_run_policys_and_comes_back() -> None:
    v1 = {
        "apiVersion": V1,
        "kind": "MPIJob",
        "metadata": {"name": "m"},
        "spec": {"cleanPodPolicy": "Running"},
    }
    v2 = to_v2beta1(v1)
    assert v2["spec"] == {"runPolicy": {"cleanPodPolicy": "Running"}}
    assert json.loads(v2["metadata"]["annotations"][ANNOTATION_V1_FIELDS]) == {
        "cleanPodPolicy": "Running",
        "cleanPodPolicyCopied": True,
        "runPolicyAdded": True,
    }
    assert to_v1(v2) == v1
    # runPolicy's own value wins; the spec-level one is only recorded.
    both = copy.deepcopy(v1)
    both["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    assert to_v2beta1(both)["spec"]["runPolicy"] == {"cleanPodPolicy": "All"}
    assert to_v1(to_v2beta1(both)) == both


def test_a_foreign_record_annotation_is_left_alone() -> None:
    job = {
        "apiVersion": V2BETA1,
        "kind": "MPIJob",
        "metadata": {"name": "m", "annotations": {ANNOTATION_V1_FIELDS: "not json"}},
        "spec": {},
    }
    assert to_v1(job)["metadata"]["annotations"] == {ANNOTATION_V1_FIELDS: "not json"}


@pytest.mark.parametrize("path", sorted(V1_EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_training_operator_v1_examples_convert_to_valid_v2beta1_jobs(path: Path) -> None:
    v1 = yaml.safe_load(path.read_text())
    assert v1["apiVersion"] == V1
    v2 = to_v2beta1(v1)
    assert v2["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert to_v1(v2) == v1
    # The v2beta1 layout is the one kubetrain.io/v1 MPIJobs have: it defaults and validates.
    as_kubetrain = {**v2, "apiVersion": "kubetrain.io/v1"}
    result = validate_job(default_job(as_kubetrain).obj)
    assert result.ok, result.errors


def review(
    desired: str, objects: list[Any], uid: str = "u-1", api_version: str = "apiextensions.k8s.io/v1"
) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    }


def v1_job(name: str) -> Obj:
    return {"apiVersion": V1, "kind": "MPIJob", "metadata": {"name": name}, "spec": {"mainContainer": "mpi"}}


def test_review_converts_every_object_in_order_and_echoes_the_uid() -> None:
    objects = [v1_job("a"), to_v2beta1(v1_job("b")), v1_job("c")]
    out = conversion_review(review(V2BETA1, objects, uid="abc"))
    assert out["apiVersion"] == "apiextensions.k8s.io/v1" and out["kind"] == "ConversionReview"
    response = out["response"]
    assert response["uid"] == "abc" and response["result"] == {"status": "Success"}
    assert [o["metadata"]["name"] for o in response["convertedObjects"]] == ["a", "b", "c"]
    assert {o["apiVersion"] for o in response["convertedObjects"]} == {V2BETA1}
    assert response["convertedObjects"][1] == objects[1]  # already at the desired version
    # A v1beta1 review is answered in v1beta1.
    assert conversion_review(review(V1, [], api_version="apiextensions.k8s.io/v1beta1"))["apiVersion"] == (
        "apiextensions.k8s.io/v1beta1"
    )


@pytest.mark.parametrize(
    ("desired", "objects", "message"),
    [
        ("kubeflow.org/v1alpha2", [v1_job("a")], 'cannot convert to "kubeflow.org/v1alpha2"'),
        (
            V1,
            [{"apiVersion": "kubeflow.org/v1alpha1", "kind": "MPIJob"}],
            'cannot convert from "kubeflow.org/v1alpha1"',
        ),
        (V1, [{"apiVersion": V2BETA1, "kind": "TFJob"}], 'cannot convert kind "TFJob"'),
        (V1, ["not an object"], "must be a JSON object"),
    ],
)
def test_unknown_versions_and_kinds_get_a_failed_review_not_an_error(
    desired: str, objects: list[Any], message: str
) -> None:
    response = conversion_review(review(desired, objects))["response"]
    assert response["uid"] == "u-1"
    assert response["result"]["status"] == "Failure"
    assert message in response["result"]["message"]
    assert response["convertedObjects"] == []


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}).encode(),
        json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}).encode(),
        json.dumps(review(V1, [], uid="")).encode(),
        json.dumps({**review(V1, []), "request": {"uid": "x", "desiredAPIVersion": V1}}).encode(),
    ],
)
def test_a_body_that_is_no_conversion_request_is_a_bad_request(body: bytes) -> None:
    with pytest.raises(BadConversionReview):
        answer(body)


def test_answer_is_the_review_as_json() -> None:
    body = json.dumps(review(V2BETA1, [v1_job("a")])).encode()
    out = json.loads(answer(body))
    assert out["response"]["convertedObjects"][0]["apiVersion"] == V2BETA1
