"""training.kubedl.io/v1alpha1: KubeDL's manifests (tests/data/kubedl, unchanged) validate and
default in KubeDL's layout, their pods carry KubeDL's labels, its unsupported fields are refused
naming them, and the CRDs take KubeDL's layout."""

from __future__ import annotations

import copy

import jobs
import pytest
from kubedl_examples import EXAMPLES, RUNNABLE, example_job

from kubetrain.api.manifests import load_all
from kubetrain.commands.render import render_job
from kubetrain.jobs.crdgen import job_crds
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.kubedllayout import from_v1, to_v1
from kubetrain.jobs.validation import validate_job
from kubetrain.kube.resources import job_resources_in


@pytest.mark.parametrize("name", RUNNABLE)
def test_kubedl_example_is_valid_and_defaults_in_kubedl_layout(name: str) -> None:
    job = example_job(name)
    defaulted = default_job(job).obj
    assert validate_job(defaulted).errors == []
    assert defaulted["apiVersion"] == "training.kubedl.io/v1alpha1"
    assert "runPolicy" not in defaulted["spec"]  # defaults land where KubeDL keeps them
    assert defaulted["spec"]["cleanPodPolicy"] == job["spec"].get("cleanPodPolicy", "Running")
    pods = jobs.rendered(job)
    assert pods
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["group-name"] == "training.kubedl.io"
        assert labels["job-name"] == job["metadata"]["name"]
        assert labels["replica-type"] == labels["kubetrain.io/replica-type"]
        assert labels["replica-index"] == labels["kubetrain.io/replica-index"]
        assert pod["metadata"]["ownerReferences"][0]["apiVersion"] == "training.kubedl.io/v1alpha1"
    roles = [p["metadata"]["labels"].get("job-role") for p in pods]
    assert roles.count("master") == 1


def test_run_policy_fields_inline_are_applied() -> None:
    job = example_job("tf/tf_job_mnist.yaml")
    job["spec"].update(
        backoffLimit=2,
        ttlSecondsAfterFinished=60,
        schedulingPolicy={"queue": "q", "priorityClassName": "high"},
    )
    v1 = to_v1(default_job(job).obj)
    rp = v1["spec"]["runPolicy"]
    assert (rp["cleanPodPolicy"], rp["backoffLimit"], rp["ttlSecondsAfterFinished"]) == ("None", 2, 60)
    assert rp["schedulingPolicy"]["queue"] == "q" and rp["schedulingPolicy"]["priorityClass"] == "high"
    back = from_v1(v1, job)
    assert back["spec"]["schedulingPolicy"]["priorityClassName"] == "high" and "runPolicy" not in back["spec"]


def test_xgboost_container_keeps_kubedl_name_in_the_job_and_runs_as_xgboost() -> None:
    job = example_job("xgboost/xgboostjob_v1alpha1_iris_train.yaml")
    defaulted = default_job(job).obj
    names = {
        c["name"]
        for r in defaulted["spec"]["xgbReplicaSpecs"].values()
        for c in r["template"]["spec"]["containers"]
    }
    assert names == {"xgboostjob"}
    children, _ = render_job(job)
    pod = next(c for c in children if c["kind"] == "Pod")
    env = {e["name"] for e in pod["spec"]["containers"][0]["env"]}
    assert pod["spec"]["containers"][0]["name"] == "xgboost" and {"MASTER_ADDR", "WORLD_SIZE"} <= env


def test_main_container_names_the_container_kubetrain_runs_under_kubedls_name() -> None:
    """An XGBoostJob's framework container is `xgboostjob` in KubeDL's layout: `mainContainer`
    naming it is accepted wherever it stands, and the pods run it as `xgboost`."""
    job = example_job("xgboost/xgboostjob_v1alpha1_iris_train.yaml")
    for rspec in job["spec"]["xgbReplicaSpecs"].values():
        containers = rspec["template"]["spec"]["containers"]
        containers.insert(0, {"name": "sidecar", "image": "busybox:1.36"})
    job["spec"]["mainContainer"] = "xgboostjob"
    defaulted = default_job(job).obj
    assert validate_job(defaulted).errors == []
    children, _ = render_job(job)
    pod = next(c for c in children if c["kind"] == "Pod")
    assert [c["name"] for c in pod["spec"]["containers"]] == ["sidecar", "xgboost"]
    assert "MASTER_ADDR" in {e["name"] for e in pod["spec"]["containers"][1].get("env") or []}
    job["spec"]["mainContainer"] = "sidecar"
    [error] = validate_job(default_job(job).obj).errors
    assert str(error).startswith("spec.mainContainer: Invalid: ")
    assert 'kubetrain runs the framework in container "xgboostjob"' in str(error)
    assert 'the one named "xgboostjob"' in str(error)


@pytest.mark.parametrize(
    ("name", "path", "message"),
    [
        ("tf/tf_job_mnist_modelversion.yaml", "spec.modelVersion", "model images are not built by kubetrain"),
        ("tf/tf_job_mnist_cache.yaml", "spec.cacheBackend", "Fluid dataset caches"),
    ],
)
def test_unsupported_kubedl_fields_are_refused_naming_them(name: str, path: str, message: str) -> None:
    errors = validate_job(default_job(example_job(name)).obj).errors
    assert [e.path for e in errors] == [path]
    assert message in errors[0].message and errors[0].kind == "Forbidden"


def test_cron_policy_and_numeric_priority_are_refused() -> None:
    job = example_job("tf/tf_job_mnist.yaml")
    job["spec"]["cronPolicy"] = {"schedule": "*/5 * * * *"}
    job["spec"]["schedulingPolicy"] = {"priority": 5}
    paths = [e.path for e in validate_job(default_job(job).obj).errors]
    assert paths == ["spec.cronPolicy", "spec.schedulingPolicy.priority"]


def test_error_paths_name_kubedl_layout() -> None:
    job = example_job("tf/tf_job_mnist.yaml")
    job["spec"]["backoffLimit"] = -1
    errors = validate_job(default_job(job).obj).errors
    assert [e.path for e in errors] == ["spec.backoffLimit"]


def test_unserved_kubedl_kinds_are_refused() -> None:
    (job,) = [
        d
        for d in load_all((EXAMPLES / "elasticdl/elasticdl_job_mnist.yaml").read_text())
        if d["kind"] == "ElasticDLJob"
    ]
    errors = validate_job(job).errors
    assert errors and errors[0].path == "kind"
    mxjob = copy.deepcopy(example_job("tf/tf_job_mnist.yaml"))
    mxjob["kind"] = "MXJob"
    assert any(e.path == "apiVersion" for e in validate_job(mxjob).errors)


def test_crds_and_resources_of_the_group() -> None:
    crds = {c["metadata"]["name"]: c for c in job_crds("training.kubedl.io")}
    assert sorted(crds) == [
        "mpijobs.training.kubedl.io",
        "pytorchjobs.training.kubedl.io",
        "tfjobs.training.kubedl.io",
        "xgboostjobs.training.kubedl.io",
    ]
    tf = crds["tfjobs.training.kubedl.io"]["spec"]["versions"][0]
    assert tf["name"] == "v1alpha1"
    spec = tf["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert {"cleanPodPolicy", "backoffLimit", "schedulingPolicy", "modelVersion", "cacheBackend"} <= set(spec)
    refs = job_resources_in(["training.kubedl.io"])
    assert {r.version for r in refs.values()} == {"v1alpha1"} and len(refs) == 4


def test_migrate_rewrites_kubedl_layouts_as_kubetrain_v1() -> None:
    from kubetrain.jobs.migrate import migrate_job

    result = migrate_job(example_job("xgboost/xgboostjob_v1alpha1_iris_train.yaml"))
    assert result.ok and result.obj is not None
    assert result.obj["apiVersion"] == "kubetrain.io/v1"
    names = {
        c["name"]
        for r in result.obj["spec"]["xgbReplicaSpecs"].values()
        for c in r["template"]["spec"]["containers"]
    }
    assert names == {"xgboost"}
    assert 'containers named "xgboostjob" (KubeDL\'s) → "xgboost" (kubetrain\'s)' in result.changes
    tf = migrate_job(example_job("tf/tf_job_mnist.yaml"), group="kubeflow.org")
    assert tf.ok and tf.obj is not None and tf.obj["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}
    assert tf.changes == [
        "apiVersion: training.kubedl.io/v1alpha1 → kubeflow.org/v1",
        "spec.cleanPodPolicy → spec.runPolicy.cleanPodPolicy",
    ]
    old = example_job("xgboost/xgboostjob_v1alpha1_iris_train.yaml")
    old["apiVersion"] = "xgboostjob.kubeflow.org/v1alpha1"  # KubeDL 0.1's group
    assert migrate_job(old).ok


def test_migrate_refuses_what_kubetrain_does_not_run() -> None:
    from kubetrain.jobs.migrate import migrate_job

    result = migrate_job(example_job("tf/tf_job_mnist_modelversion.yaml"))
    assert not result.ok
    assert result.refusals[0].startswith("spec.modelVersion: not supported by kubetrain")


def test_kubedl_mpijob_is_served_at_v1alpha1_and_migrates_to_kubeflows_stored_version() -> None:
    """KubeDL's MPIJob has one version (v1alpha1, no conversion webhook: that is kubeflow.org's
    mpijobs only); `kubetrain migrate --group kubeflow.org` writes it at kubeflow.org's stored
    MPIJob version, v2beta1, which the webhook admits."""
    from kubetrain.frameworks.registry import converted_versions, job_version
    from kubetrain.jobs.migrate import migrate_job
    from kubetrain.webhook.configurations import job_rules

    assert job_version("MPIJob", "training.kubedl.io") == "v1alpha1"
    assert job_version("TFJob", "training.kubedl.io") == "v1alpha1"
    assert converted_versions("MPIJob", "training.kubedl.io") == ()
    (mpi,) = [c for c in job_crds("training.kubedl.io") if c["spec"]["names"]["kind"] == "MPIJob"]
    assert [v["name"] for v in mpi["spec"]["versions"]] == ["v1alpha1"]
    assert "conversion" not in mpi["spec"]
    assert job_rules(["training.kubedl.io"]) == [
        {
            "apiGroups": ["training.kubedl.io"],
            "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["tfjobs", "pytorchjobs", "xgboostjobs", "mpijobs"],
            "scope": "Namespaced",
        }
    ]
    job = jobs.job(
        "MPIJob",
        "mpi",
        {"Launcher": 1, "Worker": 2},
        namespace=None,
        image="mpioperator/tensorflow-benchmarks:latest",
        spec_extra={"cleanPodPolicy": "Running"},
        api_version="training.kubedl.io/v1alpha1",
    )
    assert validate_job(default_job(job).obj).ok
    result = migrate_job(job, group="kubeflow.org")
    assert result.ok and result.obj is not None, result.refusals
    assert result.obj["apiVersion"] == "kubeflow.org/v2beta1"
    assert result.changes[0] == "apiVersion: training.kubedl.io/v1alpha1 → kubeflow.org/v2beta1"
    assert migrate_job(job).obj["apiVersion"] == "kubetrain.io/v1"  # type: ignore[index]


def test_a_kubedl_manifest_where_the_group_is_not_served_says_how_to_serve_it() -> None:
    # `kubetrain validate` (and an operator) without training.kubedl.io: the apiVersion error
    # tells a KubeDL user the flag that serves KubeDL's group, and how to rewrite the file.
    from kubetrain.jobs.typemeta import check_type_meta

    (error,) = check_type_meta(example_job("tf/tf_job_mnist.yaml"), ("kubetrain.io",))
    assert error.path == "apiVersion"
    assert "--api-groups including training.kubedl.io" in error.message
    assert "kubetrain migrate FILE" in error.message
    # A kind KubeDL's group does not have gets no such hint.
    jax = {"apiVersion": "training.kubedl.io/v1alpha1", "kind": "JAXJob", "metadata": {"name": "j"}}
    (error,) = check_type_meta(jax, ("kubetrain.io",))
    assert "--api-groups" not in error.message
