"""KubeDL's fields kubetrain's CRDs used to prune (so a real API server dropped them before the
webhook saw them, and the job ran as if they were absent): a MPIJob's `mpiDistribution` is run as
`mpiImplementation`, its v1alpha1 layout fields and any replica's `spotReplicaSpec` are refused
naming the field; the training.kubedl.io CRDs keep them, with KubeDL's types. And KubeDL's
`kubedl.io/enable-elastic-training` annotation, which kubetrain does not act on, is warned about."""

from __future__ import annotations

from typing import Any

import jobs
import pytest
from kubedl_examples import example_job

from kubetrain.commands.render import render_job
from kubetrain.jobs.crdgen import job_crds
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.kubedllayout import to_v1
from kubetrain.jobs.listkeys import node
from kubetrain.jobs.migrate import migrate_job
from kubetrain.jobs.validation import validate_job


def _mpijob(spec_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return jobs.job(
        "MPIJob",
        "mpi",
        {"Launcher": 1, "Worker": 2},
        namespace=None,
        image="mpioperator/mpi-pi:intel",
        spec_extra=spec_extra or {},
        api_version="training.kubedl.io/v1alpha1",
    )


def _errors(job: dict[str, Any]) -> list[str]:
    return [f"{e.path}: {e.kind}" for e in validate_job(default_job(job).obj).errors]


def _schema(kind: str) -> dict[str, Any]:
    (crd,) = [c for c in job_crds("training.kubedl.io") if c["spec"]["names"]["kind"] == kind]
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize(
    ("dist", "impl"), [("IntelMPI", "Intel"), ("MPICH", "MPICH"), ("OpenMPI", "OpenMPI")]
)
def test_mpi_distribution_runs_as_mpi_implementation(dist: str, impl: str) -> None:
    job = _mpijob({"mpiDistribution": dist})
    defaulted = default_job(job).obj
    assert validate_job(defaulted).errors == []
    assert defaulted["spec"]["mpiDistribution"] == dist  # kept as written
    assert defaulted["spec"]["mpiImplementation"] == impl
    children, _ = render_job(job)
    hostfile = next(c for c in children if c["kind"] == "ConfigMap")["data"]["hostfile"]
    first = hostfile.splitlines()[0]
    # KubeDL's hostfile: `host:slots` for IntelMPI and MPICH, `host slots=n` for OpenMPI.
    assert first.endswith(":1") if impl != "OpenMPI" else first.endswith(" slots=1")
    launcher = next(c for c in children if c["kind"] == "Pod" and "launcher" in c["metadata"]["name"])
    env = {e["name"] for e in launcher["spec"]["containers"][0]["env"]}
    assert ("I_MPI_HYDRA_HOST_FILE" in env) == (impl == "Intel")
    assert ("HYDRA_HOST_FILE" in env) == (impl == "MPICH")


def test_mpi_distribution_is_migrated_as_mpi_implementation() -> None:
    result = migrate_job(_mpijob({"mpiDistribution": "IntelMPI"}), group="kubeflow.org")
    assert result.ok and result.obj is not None, result.refusals
    assert result.obj["spec"]["mpiImplementation"] == "Intel"
    assert "mpiDistribution" not in result.obj["spec"]
    assert "spec.mpiDistribution IntelMPI → spec.mpiImplementation Intel" in result.changes


def test_a_bad_or_conflicting_mpi_distribution_is_refused() -> None:
    bad = validate_job(default_job(_mpijob({"mpiDistribution": "OpenMPI4"})).obj).errors
    assert [(e.path, e.kind) for e in bad] == [("spec.mpiDistribution", "NotSupported")]
    assert '"OpenMPI", "IntelMPI", "MPICH"' in bad[0].message
    both = _mpijob({"mpiDistribution": "IntelMPI", "mpiImplementation": "MPICH"})
    assert _errors(both) == ["spec.mpiDistribution: Invalid"]
    same = _mpijob({"mpiDistribution": "IntelMPI", "mpiImplementation": "Intel"})
    assert _errors(same) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("gpus", 4), ("processingUnits", 8), ("launcherOnMaster", True), ("replicas", 2), ("template", {})],
)
def test_kubedl_v1alpha1_mpijob_layout_fields_are_refused(field: str, value: Any) -> None:
    errors = validate_job(default_job(_mpijob({field: value})).obj).errors
    assert [(e.path, e.kind) for e in errors] == [(f"spec.{field}", "Forbidden")]
    assert "spec.mpiReplicaSpecs" in errors[0].message


def test_legacy_mpi_fields_are_unknown_on_other_kinds() -> None:
    job = example_job("tf/tf_job_mnist.yaml")
    job["spec"]["gpus"] = 1
    errors = validate_job(default_job(job).obj).errors
    assert [(e.path, e.kind) for e in errors] == [("spec.gpus", "Invalid")]
    assert "unknown field" in errors[0].message


@pytest.mark.parametrize("name", ["tf/tf_job_mnist.yaml", "xgboost/xgboostjob_v1alpha1_iris_train.yaml"])
def test_spot_replica_spec_is_refused_naming_the_replica(name: str) -> None:
    job = example_job(name)
    field = next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))
    rtype = next(iter(job["spec"][field]))
    job["spec"][field][rtype]["spotReplicaSpec"] = {"spotReplicaNumber": 1, "priorityClassName": "spot"}
    defaulted = default_job(job).obj
    assert defaulted["spec"][field][rtype]["spotReplicaSpec"]["spotReplicaNumber"] == 1
    assert "spotReplicaSpec" not in to_v1(defaulted)["spec"][field][rtype]
    errors = validate_job(defaulted).errors
    assert [(e.path, e.kind) for e in errors] == [(f"spec.{field}[{rtype}].spotReplicaSpec", "Forbidden")]
    assert "spot replicas are not run by kubetrain" in errors[0].message


def test_crds_keep_the_fields_with_kubedls_types() -> None:
    """A structural schema prunes what it does not describe: these must be described for the
    webhook to see them."""
    mpi = _schema("MPIJob")
    spec = mpi["properties"]["spec"]["properties"]
    assert spec["mpiDistribution"]["type"] == "string"
    assert (spec["gpus"]["type"], spec["gpus"]["format"]) == ("integer", "int32")
    assert spec["launcherOnMaster"]["type"] == "boolean"
    assert spec["template"]["x-kubernetes-preserve-unknown-fields"] is True
    for kind, field in [
        ("MPIJob", "mpiReplicaSpecs"),
        ("TFJob", "tfReplicaSpecs"),
        ("PyTorchJob", "pytorchReplicaSpecs"),
    ]:
        spot = node(_schema(kind), f"spec.{field}{{}}.spotReplicaSpec")
        assert spot["type"] == "object" and spot["description"]
    assert "gpus" not in _schema("TFJob")["properties"]["spec"]["properties"]


def test_kubedl_elastic_training_annotation_is_warned_about_on_a_pytorchjob() -> None:
    """KubeDL scales such a PyTorchJob itself; kubetrain does not, and says so."""
    job = example_job("pytorch/pytorch_job_mnist_mpi.yaml")
    job["metadata"].setdefault("annotations", {})["kubedl.io/enable-elastic-training"] = "true"
    result = validate_job(default_job(job).obj)
    assert result.errors == []
    assert [w for w in result.warnings if "enable-elastic-training" in w] == [
        "metadata.annotations[kubedl.io/enable-elastic-training]: not read by kubetrain: the job runs "
        "at the replicas its spec asks for, without KubeDL's elastic scaling; set spec.elasticPolicy "
        "for elastic training with torchrun"
    ]
    job["metadata"]["annotations"]["kubedl.io/enable-elastic-training"] = "false"
    assert not any("enable-elastic-training" in w for w in validate_job(default_job(job).obj).warnings)
    tf = example_job("tf/tf_job_mnist.yaml")
    tf["metadata"].setdefault("annotations", {})["kubedl.io/enable-elastic-training"] = "true"
    assert not any("enable-elastic-training" in w for w in validate_job(default_job(tf).obj).warnings)
