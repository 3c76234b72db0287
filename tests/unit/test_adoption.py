"""Which Kubeflow-made objects kubetrain adopts when it takes over kubeflow.org jobs, and the
labels it gives them (kubetrain.operator.adoption; the end-to-end path:
tests/integration/test_kubeflow_takeover.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.api.labels import ANNOTATION_ADOPTED, ANNOTATION_SERVICE_MODE
from kubetrain.api.servicemode import HEADLESS, PER_POD, service_mode
from kubetrain.jobs.annotations import read_annotations
from kubetrain.operator.adoption import (
    ADOPTED_FROM,
    ADOPTION_SELECTOR,
    Owner,
    adopted_job_patch,
    adoption_labels,
    kubeflow_owner,
    label_patch,
)
from kubetrain.operator.adoptlabels import CreatedLabels

Obj = dict[str, Any]
REF = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist", "uid": "u1", "controller": True}


def obj(labels: dict[str, str], refs: list[Obj] | None = None) -> Obj:
    return {
        "metadata": {"name": "x", "labels": labels, "ownerReferences": refs if refs is not None else [REF]}
    }


def kf(rtype: str = "ps", index: str = "0", job: str = "mnist", **more: str) -> dict[str, str]:
    return {
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": index,
        **more,
    }


def test_selector_lists_kubeflow_objects_not_yet_kubetrains() -> None:
    assert ADOPTION_SELECTOR == "training.kubeflow.org/job-name,!kubetrain.io/job-name"


def test_owner_is_the_controller_reference_to_a_served_kubeflow_kind() -> None:
    assert kubeflow_owner(obj(kf())) == Owner("TFJob", "mnist", "u1")
    not_controller = {**REF, "controller": False}
    assert kubeflow_owner(obj(kf(), [not_controller])) is None
    assert kubeflow_owner(obj(kf(), [{**REF, "apiVersion": "kubetrain.io/v1"}])) is None
    assert kubeflow_owner(obj(kf(), [{**REF, "kind": "Notebook"}])) is None
    assert kubeflow_owner(obj(kf(), [{**REF, "uid": ""}])) is None
    assert kubeflow_owner(obj(kf(), [])) is None


def test_pod_labels_mirror_kubeflows() -> None:
    owner = Owner("TFJob", "mnist", "u1")
    assert adoption_labels(
        obj(kf("chief", "0", **{"training.kubeflow.org/job-role": "master"})), owner, pod=True
    ) == {
        "kubetrain.io/job-name": "mnist",
        "kubetrain.io/job-kind": "TFJob",
        "app.kubernetes.io/managed-by": "kubetrain",
        "kubetrain.io/replica-type": "chief",
        "kubetrain.io/replica-index": "0",
        "kubetrain.io/job-role": "master",
    }


@pytest.mark.parametrize(
    "labels",
    [
        kf(job="other"),  # the label names another job than the ownerReference
        kf(rtype="launcher"),  # not a TFJob replica type
        kf(index="one"),
        kf(index=""),
    ],
)
def test_a_pod_that_names_no_slot_of_the_job_is_left_alone(labels: dict[str, str]) -> None:
    assert adoption_labels(obj(labels), Owner("TFJob", "mnist", "u1"), pod=True) is None


def test_a_service_needs_only_the_job_name() -> None:
    labels = {"training.kubeflow.org/job-name": "mnist"}
    assert adoption_labels(obj(labels), Owner("TFJob", "mnist", "u1"), pod=False) == {
        "kubetrain.io/job-name": "mnist",
        "kubetrain.io/job-kind": "TFJob",
        "app.kubernetes.io/managed-by": "kubetrain",
    }


def test_patch_is_guarded_by_the_resource_version() -> None:
    o = obj(kf())
    o["metadata"]["resourceVersion"] = "42"
    assert label_patch(o, {"a": "b"}) == {"metadata": {"labels": {"a": "b"}, "resourceVersion": "42"}}


def job_with(annotations: dict[str, str] | None) -> Obj:
    return {"metadata": {"name": "mnist", "uid": "u1", "annotations": annotations or {}}}


def test_an_adopted_job_is_marked_to_keep_kubeflows_addresses() -> None:
    """Kubeflow's pods have no hostname/subdomain and address their peers by Kubeflow's per-pod
    Services: a pod kubetrain recreates for an adopted job must use those addresses too."""
    assert adopted_job_patch(job_with(None)) == {
        "metadata": {"annotations": {ANNOTATION_ADOPTED: ADOPTED_FROM}}
    }
    # Already marked, or its service mode chosen by its author: nothing to write.
    assert adopted_job_patch(job_with({ANNOTATION_ADOPTED: ADOPTED_FROM})) is None
    assert adopted_job_patch(job_with({ANNOTATION_SERVICE_MODE: HEADLESS})) is None


@pytest.mark.parametrize(
    ("annotations", "default", "mode"),
    [
        ({ANNOTATION_ADOPTED: ADOPTED_FROM}, HEADLESS, PER_POD),
        ({ANNOTATION_ADOPTED: ADOPTED_FROM, ANNOTATION_SERVICE_MODE: HEADLESS}, PER_POD, HEADLESS),
        ({}, HEADLESS, HEADLESS),
        ({}, PER_POD, PER_POD),
    ],
)
def test_an_adopted_job_runs_in_per_pod_service_mode(
    annotations: dict[str, str], default: str, mode: str
) -> None:
    job = job_with(annotations)
    assert service_mode(job, default) == mode
    assert read_annotations(job).runs_service_mode(default) == mode


def tfjob(annotations: dict[str, str]) -> Obj:
    """A stored kubeflow.org TFJob (Chief 1, PS 1, Worker 2)."""

    def replica(n: int) -> Obj:
        return {"replicas": n, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}

    meta = {"name": "mnist", "namespace": "team", "uid": "u1", "annotations": annotations}
    specs = {"Chief": replica(1), "PS": replica(1), "Worker": replica(2)}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": meta,
        "spec": {"tfReplicaSpecs": specs},
    }


def test_adopted_kubeflow_pods_get_every_label_of_a_pod_kubetrain_creates() -> None:
    """The job's tenancy labels (`kubedl.io/tenancy` applies to every group) and the master role
    where kubetrain puts it (the Chief, not Worker 0), as on the pod kubetrain would create."""
    created = CreatedLabels(tfjob({"kubedl.io/tenancy": '{"tenant": "vision"}'}))
    owner = Owner("TFJob", "mnist", "u1")
    operator = {"training.kubeflow.org/operator-name": "tfjob-controller"}
    worker = adoption_labels(obj(kf("worker", "0", **operator)), owner, pod=True, created=created)
    assert worker == {
        "kubetrain.io/job-name": "mnist",
        "kubetrain.io/job-kind": "TFJob",
        "app.kubernetes.io/managed-by": "kubetrain",
        "kubetrain.io/replica-type": "worker",
        "kubetrain.io/replica-index": "0",
        "tenancy.kubetrain.io/tenant": "vision",
        **operator,
        **kf("worker", "0"),
    }
    role = {"training.kubeflow.org/job-role": "master"}
    chief = adoption_labels(obj(kf("chief", "0", **operator, **role)), owner, pod=True, created=created)
    assert chief is not None and chief["kubetrain.io/job-role"] == "master"
    assert chief["tenancy.kubetrain.io/tenant"] == "vision"
    # A Service gets the labels of kubetrain's per-pod Service (no tenancy there).
    service = adoption_labels(obj(kf("worker", "0")), owner, pod=False, created=created)
    assert service is not None and "tenancy.kubetrain.io/tenant" not in service
