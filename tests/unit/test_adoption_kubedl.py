"""Which KubeDL-made objects kubetrain adopts when it takes over training.kubedl.io jobs, which
jobs it leaves to KubeDL's pods, and the marks it writes (kubetrain.operator.adoption_kubedl;
the end-to-end path: tests/integration/test_kubedl_takeover.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.api.labels import ANNOTATION_ADOPTED
from kubetrain.api.servicemode import PER_POD, service_mode
from kubetrain.operator.adoption import (
    KUBEFLOW,
    Owner,
    adopted_job_patch,
    adoption_labels,
    owner_of,
)
from kubetrain.operator.adoption_kubedl import KUBEDL, KUBEDL_ADOPTED_FROM, kubedl_refusal
from kubetrain.operator.adoptlabels import CreatedLabels
from kubetrain.operator.desired import desired_children
from kubetrain.operator.prepare import prepare_job

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


def full_job(annotations: dict[str, str], jobs_restarts: int = 0) -> Obj:
    """A stored KubeDL PyTorchJob (Master 1, Worker 2) whose template carries a label."""

    def replica(n: int) -> Obj:
        template = {
            "metadata": {"labels": {"app": "mnist"}},
            "spec": {"containers": [{"name": "pytorch", "image": "i"}]},
        }
        return {"replicas": n, "template": template}

    out = {**job(annotations), "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)}}}
    if jobs_restarts:
        out["status"] = {"jobRestarts": jobs_restarts}
    return out


def test_adopted_pods_get_every_label_of_a_pod_kubetrain_creates() -> None:
    """The tenancy labels of `kubedl.io/tenancy`, the gang scheduler's and the attempt's too; a
    label the template already gives the pod is not rewritten."""
    stored = full_job({"kubedl.io/tenancy": '{"tenant": "vision", "region": "eu"}'}, jobs_restarts=1)
    created = CreatedLabels(stored, gang_scheduler="scheduler-plugins")
    owner = Owner("PyTorchJob", "ddp", "u1")
    made_by_kubedl = {"app": "mnist", **kubedl("worker", "1")}
    patch = adoption_labels(obj(made_by_kubedl), owner, pod=True, source=KUBEDL, created=created)
    assert patch == {
        "kubetrain.io/job-name": "ddp",
        "kubetrain.io/job-kind": "PyTorchJob",
        "app.kubernetes.io/managed-by": "kubetrain",
        "kubetrain.io/replica-type": "worker",
        "kubetrain.io/replica-index": "1",
        "tenancy.kubetrain.io/tenant": "vision",
        "tenancy.kubetrain.io/region": "eu",
        "kubetrain.io/attempt": "1",
        "scheduling.x-k8s.io/pod-group": "ddp",
        **kubedl("worker", "1"),
    }
    # Adopted, the pod's labels are those of the pod kubetrain would create in that slot.
    prepared = prepare_job(stored, gang_scheduling=True)
    assert prepared.shape is not None
    pod = desired_children(prepared.shape, gang_scheduler="scheduler-plugins").pod("Worker", 1, attempt=1)
    assert {**made_by_kubedl, **patch} == pod["metadata"]["labels"]
    master = adoption_labels(
        obj(kubedl("master", "0", **{"job-role": "master"})), owner, pod=True, source=KUBEDL, created=created
    )
    assert master is not None and master["kubetrain.io/job-role"] == "master"


def test_a_job_kubetrain_cannot_lay_out_still_gives_its_tenancy() -> None:
    """An invalid job (no replica specs) creates no pod: its pods get the labels KubeDL's
    describe and the job's tenancy labels."""
    stored = job({"kubedl.io/tenancy": '{"tenant": "vision"}'})
    created = CreatedLabels(stored)
    labels = adoption_labels(
        obj(kubedl()), Owner("PyTorchJob", "ddp", "u1"), pod=True, source=KUBEDL, created=created
    )
    assert labels == {
        "kubetrain.io/job-name": "ddp",
        "kubetrain.io/job-kind": "PyTorchJob",
        "app.kubernetes.io/managed-by": "kubetrain",
        "kubetrain.io/replica-type": "worker",
        "kubetrain.io/replica-index": "0",
        "tenancy.kubetrain.io/tenant": "vision",
    }


def test_the_adopted_job_gets_its_tenancy_labels() -> None:
    """A job KubeDL stored has `kubedl.io/tenancy` but not the labels kubetrain's webhook derives
    from it; the adoption patch adds them (and removes one the annotation no longer names), also
    when the job needs no mark, so a tenant quota counts it."""
    tenancy = {"kubedl.io/tenancy": '{"tenant": "vision", "user": "ana"}'}
    assert adopted_job_patch(job(tenancy), KUBEDL) == {
        "metadata": {
            "annotations": {ANNOTATION_ADOPTED: KUBEDL_ADOPTED_FROM},
            "labels": {"tenancy.kubetrain.io/tenant": "vision", "tenancy.kubetrain.io/user": "ana"},
        }
    }
    marked = job({**tenancy, ANNOTATION_ADOPTED: KUBEDL_ADOPTED_FROM})
    marked["metadata"]["labels"] = {"tenancy.kubetrain.io/tenant": "vision", "tenancy.kubetrain.io/idc": "x"}
    assert adopted_job_patch(marked, KUBEDL) == {
        "metadata": {"labels": {"tenancy.kubetrain.io/user": "ana", "tenancy.kubetrain.io/idc": None}}
    }
    marked["metadata"]["labels"] = {
        "tenancy.kubetrain.io/tenant": "vision",
        "tenancy.kubetrain.io/user": "ana",
    }
    assert adopted_job_patch(marked, KUBEDL) is None
    # A malformed annotation (stored without the webhook) gives no labels, as at admission.
    assert adopted_job_patch(job({"kubedl.io/tenancy": "{bad", ANNOTATION_ADOPTED: "x"}), KUBEDL) is None
