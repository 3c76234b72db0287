"""Which KubeDL-made objects kubetrain adopts when it takes over training.kubedl.io jobs, which
jobs it leaves to KubeDL's pods, and the marks it writes (kubetrain.operator.adoption_kubedl;
the end-to-end path: tests/integration/test_kubedl_takeover.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.api.labels import ANNOTATION_ADOPTED
from kubetrain.api.servicemode import PER_POD, service_mode
from kubetrain.operator.adoption import KUBEFLOW, Owner, adopted_job_patch, adoption_labels, owner_of
from kubetrain.operator.adoption_kubedl import KUBEDL, KUBEDL_ADOPTED_FROM, kubedl_refusal

Obj = dict[str, Any]
REF = {
    "apiVersion": "training.kubedl.io/v1alpha1",
    "kind": "PyTorchJob",
    "name": "ddp",
    "uid": "u1",
    "controller": True,
}


def obj(labels: dict[str, str], refs: list[Obj] | None = None) -> Obj:
    return {
        "metadata": {"name": "x", "labels": labels, "ownerReferences": refs if refs is not None else [REF]}
    }


def kubedl(rtype: str = "worker", index: str = "0", job: str = "ddp", **more: str) -> dict[str, str]:
    """JobController.GenLabels and createNewPod's labels."""
    return {
        "group-name": "training.kubedl.io",
        "job-name": job,
        "replica-type": rtype,
        "replica-index": index,
        **more,
    }


def job(annotations: dict[str, str] | None = None, kind: str = "PyTorchJob") -> Obj:
    meta: Obj = {"name": "ddp", "namespace": "team", "uid": "u1"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "training.kubedl.io/v1alpha1", "kind": kind, "metadata": meta}


def test_selector_lists_kubedl_objects_not_yet_kubetrains() -> None:
    assert KUBEDL.selector == "group-name=training.kubedl.io,job-name,!kubetrain.io/job-name"


def test_owner_is_a_kubedl_job_of_a_served_kind() -> None:
    assert owner_of(obj(kubedl()), KUBEDL) == Owner("PyTorchJob", "ddp", "u1")
    assert owner_of(obj(kubedl()), KUBEFLOW) is None  # another group's operator
    assert owner_of(obj(kubedl(), [{**REF, "kind": "XDLJob"}]), KUBEDL) is None  # not served
    assert owner_of(obj(kubedl(), [{**REF, "controller": False}]), KUBEDL) is None


def test_kubedl_labels_become_kubetrains() -> None:
    owner = Owner("PyTorchJob", "ddp", "u1")
    master = adoption_labels(
        obj(kubedl("master", "0", **{"job-role": "master"})), owner, pod=True, source=KUBEDL
    )
    assert master == {
        "kubetrain.io/job-name": "ddp",
        "kubetrain.io/job-kind": "PyTorchJob",
        "app.kubernetes.io/managed-by": "kubetrain",
        "kubetrain.io/replica-type": "master",
        "kubetrain.io/replica-index": "0",
        "kubetrain.io/job-role": "master",
    }
    # Another job's pod (job-name disagrees with the owner), or a slot the kind lacks: left alone.
    assert adoption_labels(obj(kubedl(job="other")), owner, pod=True, source=KUBEDL) is None
    assert adoption_labels(obj(kubedl("ps")), owner, pod=True, source=KUBEDL) is None
    # Kubeflow's labels do not describe a KubeDL-made pod.
    assert adoption_labels(obj(kubedl()), owner, pod=True, source=KUBEFLOW) is None


def test_an_adopted_kubedl_job_is_marked_and_runs_per_pod() -> None:
    patch = adopted_job_patch(job(), KUBEDL)
    assert patch == {"metadata": {"annotations": {ANNOTATION_ADOPTED: KUBEDL_ADOPTED_FROM}}}
    assert KUBEDL_ADOPTED_FROM == "training.kubedl.io/kubedl"
    assert service_mode(job(patch["metadata"]["annotations"])) == PER_POD


@pytest.mark.parametrize(
    ("annotations", "kind", "why"),
    [
        (
            {"kubedl.io/network-mode": "host"},
            "PyTorchJob",
            "host network mode (kubedl.io/network-mode: host)",
        ),
        ({"kubetrain.io/network-mode": "host"}, "TFJob", "host network mode"),
        (
            {"kubedl.io/git-sync-config": '{"source": "https://github.com/x/y.git"}'},
            "TFJob",
            "kubedl.io/git-sync-config",
        ),
        ({}, "MPIJob", "besides its pods and Services (such as ddp-config)"),
        (
            {},
            "XGBoostJob",
            "name their container xgboostjob, and kubetrain reads the restarts and exit codes of "
            "its own container name, xgboost",
        ),
    ],
)
def test_jobs_kubetrain_cannot_keep_running_are_refused_saying_what_to_do(
    annotations: dict[str, str], kind: str, why: str
) -> None:
    message = kubedl_refusal(job(annotations, kind))
    assert message is not None and why in message
    assert "kubectl -n team delete pods,services -l group-name=training.kubedl.io,job-name=ddp" in message


def test_other_kubedl_jobs_are_adopted() -> None:
    assert kubedl_refusal(job()) is None
    assert kubedl_refusal(job({"kubedl.io/network-mode": "", "kubedl.io/tenancy": '{"tenant": "a"}'})) is None
    assert kubedl_refusal(job(kind="TFJob")) is None
