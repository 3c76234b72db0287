"""`kubetrain migrate`: each older Kubeflow layout, from Kubeflow's own repositories
(tests/data/kubeflow-old/README.md), converted with every change said — or refused, saying why;
the converted job validates and renders as the controller would run it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.cli import main
from kubetrain.commands.render import render_job
from kubetrain.jobs.migrate import migrate_job

DATA = Path(__file__).resolve().parents[1] / "data" / "kubeflow-old"


def load(name: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((DATA / name).read_text())
    return obj


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("tf-v1alpha2-dist-mnist.yaml", ["apiVersion: kubeflow.org/v1alpha2 → kubetrain.io/v1"]),
        (
            "tf-v1beta1-mnist-with-summaries.yaml",
            [
                "apiVersion: kubeflow.org/v1beta1 → kubetrain.io/v1",
                "spec.cleanPodPolicy → spec.runPolicy.cleanPodPolicy",
            ],
        ),
        (
            "tf-v1beta2-distributed.yaml",
            [
                "apiVersion: kubeflow.org/v1beta2 → kubetrain.io/v1",
                "spec.cleanPodPolicy → spec.runPolicy.cleanPodPolicy",
            ],
        ),
        (
            "tf-v1-spec-level-run-policy.yaml",
            [
                "apiVersion: kubeflow.org/v1 → kubetrain.io/v1",
                "spec.cleanPodPolicy → spec.runPolicy.cleanPodPolicy",
            ],
        ),
        ("mx-v1beta1-dist-gpu.yaml", ["apiVersion: kubeflow.org/v1beta1 → kubetrain.io/v1"]),
        ("pytorch-v1beta1-mnist-gloo.yaml", ["apiVersion: kubeflow.org/v1beta1 → kubetrain.io/v1"]),
    ],
)
def test_each_convertible_layout(name: str, changes: list[str]) -> None:
    original = load(name)
    migration = migrate_job(copy.deepcopy(original))
    assert migration.ok and migration.changes == changes
    out = migration.obj
    assert out is not None and out["apiVersion"] == "kubetrain.io/v1"
    # Nothing else moved: the replica map and metadata are as they were.
    field = {"TFJob": "tfReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs", "MXJob": "mxReplicaSpecs"}[
        out["kind"]
    ]
    assert out["spec"][field] == original["spec"][field] and out["metadata"] == original["metadata"]
    if "cleanPodPolicy" in original["spec"]:
        assert out["spec"]["runPolicy"] == {"cleanPodPolicy": original["spec"]["cleanPodPolicy"]}
        assert "cleanPodPolicy" not in out["spec"]
    children, errors = render_job(out)
    assert errors == [] and any(c["kind"] == "Pod" for c in children)
    again = migrate_job(out)
    assert again.ok and again.changes == [] and again.obj == out  # idempotent


def test_kubeflow_group_target() -> None:
    migration = migrate_job(load("tf-v1beta2-distributed.yaml"), "kubeflow.org")
    assert migration.ok and migration.obj is not None
    assert migration.obj["apiVersion"] == "kubeflow.org/v1"
    assert migration.changes[0] == "apiVersion: kubeflow.org/v1beta2 → kubeflow.org/v1"


def test_v1alpha1_is_refused_saying_why() -> None:
    migration = migrate_job(load("tf-v1alpha1.yaml"))
    assert migration.obj is None
    (why,) = migration.refusals
    assert "kubeflow.org/v1alpha1" in why and "list" in why and "by hand" in why


def test_mxnet_operator_success_policy_is_refused_naming_the_field() -> None:
    migration = migrate_job(load("mx-v1-byteps-success-policy.yaml"))
    assert migration.obj is None
    assert "spec.cleanPodPolicy → spec.runPolicy.cleanPodPolicy" in migration.changes
    (why,) = migration.refusals
    assert 'spec.successPolicy: Invalid: unknown field "successPolicy"' in why


def test_disagreeing_spec_level_and_run_policy_values_are_refused() -> None:
    obj = load("tf-v1beta2-distributed.yaml")
    obj["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    (why,) = migrate_job(obj).refusals
    assert why == 'spec.cleanPodPolicy ("None") and spec.runPolicy.cleanPodPolicy ("All") disagree: keep one'


@pytest.mark.parametrize(
    ("obj", "needle"),
    [
        (
            {"apiVersion": "kubeflow.org/v1beta2", "kind": "SparkJob"},
            'kind "SparkJob" is not one kubetrain serves',
        ),
        (
            {"apiVersion": "batch/v1", "kind": "TFJob"},
            'apiVersion "batch/v1" is not a Kubeflow or kubetrain version',
        ),
        ({"apiVersion": "kubeflow.org/v2", "kind": "TFJob"}, 'apiVersion "kubeflow.org/v2" is not a version'),
        ([1, 2], "not a Kubernetes object"),
    ],
)
def test_other_refusals(obj: Any, needle: str) -> None:
    migration = migrate_job(obj)
    assert migration.obj is None and needle in migration.refusals[0]


def test_cli_prints_yaml_on_stdout_and_changes_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = DATA / "tf-v1beta2-distributed.yaml", DATA / "tf-v1alpha1.yaml"
    assert main(["migrate", str(good)]) == 0
    captured = capsys.readouterr()
    (doc,) = list(yaml.safe_load_all(captured.out))
    assert doc["apiVersion"] == "kubetrain.io/v1" and doc["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    assert (
        f"{good}#1 (TFJob/distributed-training): spec.cleanPodPolicy → spec.runPolicy.cleanPodPolicy"
        in captured.err
    )
    assert main(["migrate", str(good), str(bad)]) == 1
    captured = capsys.readouterr()
    assert len(list(yaml.safe_load_all(captured.out))) == 1  # the convertible one is still printed
    assert f"{bad}#1 (TFJob/example-job): cannot convert: apiVersion kubeflow.org/v1alpha1" in captured.err


MPI_V1 = Path(__file__).resolve().parents[1] / "data" / "training-operator-mpi" / "examples" / "mpi"


@pytest.mark.parametrize(
    ("group", "target"), [("kubetrain.io", "kubetrain.io/v1"), ("kubeflow.org", "kubeflow.org/v2beta1")]
)
def test_training_operator_v1_mpijob_becomes_mpi_operators_layout(group: str, target: str) -> None:
    obj = yaml.safe_load((MPI_V1 / "tensorflow-mnist-elastic.yaml").read_text())
    obj["spec"]["mainContainer"] = "mpi-launcher"
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "mpi-launcher"
    result = migrate_job(obj, group)
    assert result.ok, result.refusals
    assert result.obj is not None and result.obj["apiVersion"] == target
    spec = result.obj["spec"]
    assert "mainContainer" not in spec and "cleanPodPolicy" not in spec
    assert spec["runPolicy"] == {"cleanPodPolicy": "Running"}
    assert "kubetrain.io/mpijob-v1-fields" not in (result.obj["metadata"].get("annotations") or {})
    assert any("over SSH" in c and "not through kubectl exec" in c for c in result.changes)
    assert any('spec.mainContainer "mpi-launcher" removed' in c for c in result.changes)
    # mpi-operator's own v2beta1 manifest needs only its apiVersion changed for kubetrain.io.
    v2 = migrate_job({**result.obj, "apiVersion": "kubeflow.org/v2beta1"}, "kubetrain.io")
    assert v2.ok and v2.obj is not None and v2.obj["apiVersion"] == "kubetrain.io/v1"


def test_a_v1_mpijob_main_container_kubetrain_cannot_run_is_refused() -> None:
    obj = yaml.safe_load((MPI_V1 / "tensorflow-mnist.yaml").read_text())
    obj["spec"]["mainContainer"] = "sidecar"
    result = migrate_job(obj, "kubeflow.org")
    assert not result.ok
    assert 'spec.mainContainer "sidecar" is not the first container' in result.refusals[0]
