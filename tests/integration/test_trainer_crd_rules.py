"""Trainer's CEL rules on kubetrain's TrainJob and runtime CRDs (kubetrain.jobs.trainerrules),
evaluated by devcluster itself: no kubetrain webhook is installed here, so every refusal below is
the API server's own, with Trainer's message (422 Invalid, as kube-apiserver answers)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import TRAINING_RUNTIMES, TRAINJOBS

from .test_trainer_crds import install_trainer_crds

pytestmark = pytest.mark.asyncio

Obj = dict[str, Any]
MANAGED_BY = "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
STORAGE_URI = "storageUri may be empty, or it must be a valid URI (scheme://...)"


def trainjob(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


async def refused(call: Any) -> ApiError:
    with pytest.raises(ApiError) as err:
        await call
    assert err.value.status == 422 and err.value.reason == "Invalid", err.value.message
    return err.value


async def test_managed_by_takes_trainers_two_values_and_never_changes(kube: KubeClient) -> None:
    await install_trainer_crds(kube)
    err = await refused(kube.create(TRAINJOBS, trainjob("other", managedBy="acme.io/x"), namespace="default"))
    assert err.message == (
        'TrainJob.trainer.kubeflow.org "other" is invalid: '
        f'spec.managedBy: Invalid value: "acme.io/x": {MANAGED_BY}'
    )
    job = trainjob("mk", managedBy="kueue.x-k8s.io/multikueue")
    await kube.create(TRAINJOBS, job, namespace="default")
    patch = {"spec": {"managedBy": "trainer.kubeflow.org/trainjob-controller"}}
    err = await refused(kube.patch(TRAINJOBS, "default", "mk", patch))
    assert err.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "trainer.kubeflow.org/trainjob-controller": field is immutable',
            "field": "spec.managedBy",
        }
    ]
    stored = await kube.get(TRAINJOBS, "default", "mk")
    assert stored["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"


async def test_storage_uris_are_empty_or_scheme_uris(kube: KubeClient) -> None:
    await install_trainer_crds(kube)
    initializer = {"dataset": {"storageUri": "bucket/data"}, "model": {"storageUri": "hf:model"}}
    err = await refused(kube.create(TRAINJOBS, trainjob("uri", initializer=initializer), namespace="default"))
    assert err.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "bucket/data": {STORAGE_URI}',
            "field": "spec.initializer.dataset.storageUri",
        },
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "hf:model": {STORAGE_URI}',
            "field": "spec.initializer.model.storageUri",
        },
    ]
    good = {"dataset": {"storageUri": "s3://bucket/data"}, "model": {"storageUri": ""}}
    stored = await kube.create(TRAINJOBS, trainjob("uri", initializer=good), namespace="default")
    assert stored["spec"]["initializer"] == good


async def test_runtime_ref_and_deadline_never_change_and_suspend_does(kube: KubeClient) -> None:
    await install_trainer_crds(kube)
    created = await kube.create(
        TRAINJOBS, trainjob("imm", activeDeadlineSeconds=60, suspend=True), namespace="default"
    )
    changed = copy.deepcopy(created)
    changed["spec"]["runtimeRef"]["name"] = "other"
    changed["spec"]["activeDeadlineSeconds"] = 120
    err = await refused(kube.replace(TRAINJOBS, changed))
    assert err.message == (
        'TrainJob.trainer.kubeflow.org "imm" is invalid: [spec.activeDeadlineSeconds: Invalid value: 120: '
        "field is immutable, spec.runtimeRef: Invalid value: field is immutable]"
    )
    # spec.trainer and spec.initializer may change (kubetrain's webhook: only while suspended)
    resumed = await kube.patch(
        TRAINJOBS, "default", "imm", {"spec": {"suspend": False, "trainer": {"numNodes": 2}}}
    )
    assert resumed["spec"]["suspend"] is False and resumed["spec"]["trainer"] == {"numNodes": 2}


async def test_a_trainer_status_needs_its_last_updated_time(kube: KubeClient) -> None:
    await install_trainer_crds(kube)
    await kube.create(TRAINJOBS, trainjob("st"), namespace="default")
    report = {"status": {"trainerStatus": {"progressPercentage": 40}}}
    err = await refused(kube.patch_status(TRAINJOBS, "default", "st", report))
    assert err.message == (
        'TrainJob.trainer.kubeflow.org "st" is invalid: status.trainerStatus: Invalid value: '
        "lastUpdatedTime is required when trainerStatus is present"
    )
    report["status"]["trainerStatus"]["lastUpdatedTime"] = "2026-11-27T07:00:00Z"
    stored = await kube.patch_status(TRAINJOBS, "default", "st", report)
    assert stored["status"]["trainerStatus"]["progressPercentage"] == 40


def runtime(name: str, ml_policy: Obj, jobset: Obj) -> Obj:
    """A runtime of `jobset`, each replicated job given an empty Job template when it has none
    (JobSet's schema requires one)."""
    for rjob in jobset.get("replicatedJobs", []):
        rjob.setdefault("template", {})
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name},
        "spec": {"mlPolicy": {"numNodes": 1, **ml_policy}, "template": {"spec": jobset}},
    }


async def test_runtime_rules(kube: KubeClient) -> None:
    """One ML policy source; JobSet's startupPolicy InOrder without dependsOn; JobSet's
    immutable network, which Trainer's runtime CRDs carry."""
    await install_trainer_crds(kube)
    rjobs = [
        {"name": "node", "replicas": 1},
        {"name": "aux", "dependsOn": [{"name": "node", "status": "Ready"}]},
    ]
    bad = runtime(
        "bad",
        {"torch": {}, "mpi": {"numProcPerNode": 1}},
        {"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": rjobs},
    )
    err = await refused(kube.create(TRAINING_RUNTIMES, bad, namespace="default"))
    assert err.message == (
        'TrainingRuntime.trainer.kubeflow.org "bad" is invalid: ['
        "spec.mlPolicy: Invalid value: Only one of the policy can be configured, "
        "spec.template.spec: Invalid value: StartupPolicy and DependsOn APIs are mutually exclusive]"
    )
    good = runtime("good", {"torch": {}}, {"network": {"subdomain": "a"}, "replicatedJobs": rjobs})
    await kube.create(TRAINING_RUNTIMES, good, namespace="default")
    patch = {"spec": {"template": {"spec": {"network": {"subdomain": "b"}}}}}
    err = await refused(kube.patch(TRAINING_RUNTIMES, "default", "good", patch))
    assert err.message == (
        'TrainingRuntime.trainer.kubeflow.org "good" is invalid: '
        "spec.template.spec.network: Invalid value: Value is immutable"
    )


async def test_in_place_restart_is_refused_with_why(kube: KubeClient) -> None:
    """JobSet's `restartStrategy: InPlaceRestart` is in the schema's enum (as in Trainer's CRDs),
    so the API server reaches the CRD's rule and refuses it with one cause that says why — not
    the enum's `Unsupported value` followed by "some validation rules were not checked"."""
    await install_trainer_crds(kube)
    rjobs = [{"name": "node", "replicas": 1}]
    failure = {"maxRestarts": 3, "restartStrategy": "InPlaceRestart"}
    bad = runtime("inplace", {"torch": {}}, {"failurePolicy": failure, "replicatedJobs": rjobs})
    err = await refused(kube.create(TRAINING_RUNTIMES, bad, namespace="default"))
    assert err.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "InPlaceRestart": InPlaceRestart is not supported, supported values: '
            '"Recreate", "BlockingRecreate": JobSet\'s in-place restart needs its restart agent sidecar, '
            "which reads the JobSet object's status, and kubetrain runs a TrainJob's pods without a "
            "JobSet object",
            "field": "spec.template.spec.failurePolicy.restartStrategy",
        }
    ]
    other = runtime(
        "other", {"torch": {}}, {"failurePolicy": {"restartStrategy": "Never"}, "replicatedJobs": rjobs}
    )
    err = await refused(kube.create(TRAINING_RUNTIMES, other, namespace="default"))
    assert err.body["details"]["causes"][0] == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: "Never": supported values: '
        '"Recreate", "BlockingRecreate", "InPlaceRestart"',
        "field": "spec.template.spec.failurePolicy.restartStrategy",
    }


async def test_a_jobset_template_handed_to_another_controller_is_refused_with_why(kube: KubeClient) -> None:
    """The JobSet template's `managedBy`: JobSet's own controller or unset; another would hand
    Trainer's JobSet object to that controller, and kubetrain makes none."""
    await install_trainer_crds(kube)
    rjobs = [{"name": "node", "replicas": 1}]
    bad = runtime("managed", {"torch": {}}, {"managedBy": "acme.io/x", "replicatedJobs": rjobs})
    err = await refused(kube.create(TRAINING_RUNTIMES, bad, namespace="default"))
    assert err.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "acme.io/x": only "jobset.sigs.k8s.io/jobset-controller" (or unset): '
            "kubetrain runs a TrainJob's pods itself, with no JobSet object for another controller to "
            "manage; a TrainJob's own spec.managedBy hands it to another controller "
            "(kueue.x-k8s.io/multikueue)",
            "field": "spec.template.spec.managedBy",
        }
    ]
    own = runtime(
        "jobset-managed",
        {"torch": {}},
        {"managedBy": "jobset.sigs.k8s.io/jobset-controller", "replicatedJobs": copy.deepcopy(rjobs)},
    )
    await kube.create(TRAINING_RUNTIMES, own, namespace="default")


async def test_one_pod_group_policy_source(kube: KubeClient) -> None:
    """A runtime naming both gang schedulers is refused with the field and what is valid (Kubeflow
    Trainer issue 4060: Trainer 2.3 admits it); either one alone is admitted."""
    await install_trainer_crds(kube)
    rjobs = [{"name": "node", "replicas": 1}]
    both = runtime("both", {"torch": {}}, {"replicatedJobs": rjobs})
    both["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 30}, "volcano": {}}
    err = await refused(kube.create(TRAINING_RUNTIMES, both, namespace="default"))
    assert err.message == (
        'TrainingRuntime.trainer.kubeflow.org "both" is invalid: spec.podGroupPolicy: Invalid value: '
        "Only one of the podGroupPolicy sources can be configured: coscheduling or volcano"
    )
    for source in ("coscheduling", "volcano"):
        one = runtime(f"only-{source}", {"torch": {}}, {"replicatedJobs": copy.deepcopy(rjobs)})
        one["spec"]["podGroupPolicy"] = {source: {}}
        await kube.create(TRAINING_RUNTIMES, one, namespace="default")


async def test_jobset_and_trainer_schema_defaults_and_enums(kube: KubeClient) -> None:
    """A failurePolicy is stored with JobSet's default `restartStrategy: Recreate`; an MPI
    policy's `mpiImplementation` takes Trainer's enum: "" is admitted, Intel is refused by the
    schema."""
    await install_trainer_crds(kube)
    rjobs = [{"name": "node", "replicas": 1}]
    made = runtime("restarts", {"torch": {}}, {"failurePolicy": {"maxRestarts": 2}, "replicatedJobs": rjobs})
    stored = await kube.create(TRAINING_RUNTIMES, made, namespace="default")
    assert stored["spec"]["template"]["spec"]["failurePolicy"] == {
        "maxRestarts": 2,
        "restartStrategy": "Recreate",
    }
    empty = runtime("mpi-empty", {"mpi": {"mpiImplementation": ""}}, {"replicatedJobs": rjobs})
    stored = await kube.create(TRAINING_RUNTIMES, empty, namespace="default")
    assert stored["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] == ""
    intel = runtime("mpi-intel", {"mpi": {"mpiImplementation": "Intel"}}, {"replicatedJobs": rjobs})
    err = await refused(kube.create(TRAINING_RUNTIMES, intel, namespace="default"))
    assert err.body["details"]["causes"][0] == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: "Intel": supported values: "OpenMPI", ""',
        "field": "spec.mlPolicy.mpi.mpiImplementation",
    }


async def test_jobsets_required_fields_and_trainers_bounds(kube: KubeClient) -> None:
    """Markers of Trainer's CRDs the webhook does not check, applied by the API server: a failure
    policy rule needs `name` and `action`, a TrainJob at most 16 runtime patches."""
    await install_trainer_crds(kube)
    rjobs = [{"name": "node", "replicas": 1, "template": {}}]
    unnamed = runtime("unnamed", {"torch": {}}, {"failurePolicy": {"rules": [{}]}, "replicatedJobs": rjobs})
    err = await refused(kube.create(TRAINING_RUNTIMES, unnamed, namespace="default"))
    assert [(c.get("field"), c["reason"]) for c in err.body["details"]["causes"]] == [
        ("spec.template.spec.failurePolicy.rules[0].action", "FieldValueRequired"),
        ("spec.template.spec.failurePolicy.rules[0].name", "FieldValueRequired"),
        (None, "FieldValueInvalid"),  # a Required error stops the CEL rules: "… were not checked …"
    ]
    patches = [{"manager": f"acme.io/m{i}"} for i in range(17)]
    err = await refused(kube.create(TRAINJOBS, trainjob("many", runtimePatches=patches), namespace="default"))
    assert err.body["details"]["causes"][0] == {
        "reason": "FieldValueTooMany",
        "message": "Too many: 17: must have at most 16 items",
        "field": "spec.runtimePatches",
    }


async def test_depends_on_is_immutable_but_a_reorder_is_the_same_list(kube: KubeClient) -> None:
    """JobSet's `self == oldSelf` on `replicatedJobs[].dependsOn`, a list keyed by `name`: the
    API server compares such a list by its keys in any order (k8s.io/apiserver pkg/cel/common
    `unstructuredMapList.Equal`), so the same entries reordered are accepted and a changed entry
    is refused with JobSet's message."""
    await install_trainer_crds(kube)
    deps = [{"name": "node", "status": "Ready"}, {"name": "init", "status": "Complete"}]

    def rjobs(depends_on: list[Obj]) -> list[Obj]:
        return [
            {"name": "init", "replicas": 1, "template": {}},
            {"name": "node", "replicas": 1, "template": {}},
            {"name": "aux", "replicas": 1, "template": {}, "dependsOn": depends_on},
        ]

    await kube.create(
        TRAINING_RUNTIMES,
        runtime("deps", {"torch": {}}, {"replicatedJobs": rjobs(deps)}),
        namespace="default",
    )
    reordered = {"spec": {"template": {"spec": {"replicatedJobs": rjobs(deps[::-1])}}}}
    await kube.patch(TRAINING_RUNTIMES, "default", "deps", reordered)
    stored = await kube.get(TRAINING_RUNTIMES, "default", "deps")
    assert stored["spec"]["template"]["spec"]["replicatedJobs"][2]["dependsOn"] == deps[::-1]

    changed = copy.deepcopy(deps)
    changed[0]["status"] = "Complete"
    patch = {"spec": {"template": {"spec": {"replicatedJobs": rjobs(changed)}}}}
    err = await refused(kube.patch(TRAINING_RUNTIMES, "default", "deps", patch))
    assert err.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: Value is immutable",
            "field": "spec.template.spec.replicatedJobs[2].dependsOn",
        }
    ]
    err = await refused(
        kube.patch(
            TRAINING_RUNTIMES,
            "default",
            "deps",
            {"spec": {"template": {"spec": {"replicatedJobs": rjobs(deps[:1])}}}},
        )
    )
    assert "spec.template.spec.replicatedJobs[2].dependsOn: Invalid value: Value is immutable" in err.message
    stored = await kube.get(TRAINING_RUNTIMES, "default", "deps")
    assert stored["spec"]["template"]["spec"]["replicatedJobs"][2]["dependsOn"] == deps[::-1]
