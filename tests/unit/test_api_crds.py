"""Generated CRDs: structural-schema rules, size, subresources, columns, committed files."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from kubetrain.commands.crds import render_crd
from kubetrain.frameworks.registry import FRAMEWORKS, known_kinds
from kubetrain.jobs.crdgen import all_crds, crd_file_name, job_crds

CRDS = all_crds()
IDS = [c["metadata"]["name"] for c in CRDS]
ROOT = Path(__file__).resolve().parents[2]


# A pod template's defaulted list keys (as controller-gen writes core/v1's `+default` markers).
KEY_DEFAULTS = [(["ports[]", "protocol"], "TCP"), (["imagePullSecrets[]", "name"], "")]


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}[*]")
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], f"{path}[]")


@pytest.mark.parametrize("crd", CRDS, ids=IDS)
def test_schema_is_structural(crd: dict[str, Any]) -> None:
    for path, node in nodes(schema_of(crd)):
        assert "$ref" not in node, path
        int_or_string = node.get("x-kubernetes-int-or-string") is True
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        # every node has a type, except int-or-string ones
        assert node.get("type") or int_or_string, path
        if "anyOf" in node:
            assert int_or_string and node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties") is not False, path
        assert "nullable" not in node, path
        if "default" in node:  # only the list-map keys upstream's CRDs default
            assert (path.split(".")[-2:], node["default"]) in KEY_DEFAULTS, path
        if node.get("type") == "object":
            assert (
                "properties" in node or "additionalProperties" in node or preserve or path == ".metadata"
            ), path
        if node.get("type") == "array":
            assert "items" in node, path
    assert schema_of(crd)["properties"]["metadata"] == {"type": "object"}


@pytest.mark.parametrize("crd", CRDS, ids=IDS)
def test_small_enough_for_client_side_apply(crd: dict[str, Any]) -> None:
    # kubectl apply (client side) stores the object in an annotation limited to 256 KiB.
    assert len(render_crd(crd).encode()) < 256 * 1024
    assert len(json.dumps(crd).encode()) < 256 * 1024


@pytest.mark.parametrize("crd", CRDS, ids=IDS)
def test_is_a_valid_crd_object(crd: dict[str, Any]) -> None:
    kubernetes_validate.validate(crd, "1.34", strict=True)


# Short names users type (`kubectl get ptj`): fixed once published.
SHORT_NAMES = {
    "TFJob": ["tfj"],
    "PyTorchJob": ["ptj"],
    "MXJob": ["mxj"],
    "XGBoostJob": ["xgbj"],
    "JAXJob": ["jaxj"],
}


def test_job_crds_names_subresources_and_columns() -> None:
    by_kind = {c["spec"]["names"]["kind"]: c for c in job_crds()}
    assert set(by_kind) == set(known_kinds())
    assert {"TFJob", "PyTorchJob", "MXJob", "XGBoostJob", "JAXJob", "PaddleJob", "MPIJob"} <= set(by_kind)
    for kind in by_kind:
        spec = by_kind[kind]["spec"]
        assert spec["group"] == "kubetrain.io" and spec["scope"] == "Namespaced"
        assert spec["names"]["shortNames"] == SHORT_NAMES.get(kind, list(FRAMEWORKS[kind].short_names))
        assert spec["names"]["categories"] == ["kubetrain"]
        (version,) = spec["versions"]
        assert version["name"] == "v1" and version["served"] and version["storage"]
        assert "status" in version["subresources"]
        columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
        assert columns["State"] == ".status.conditions[-1:].type"
        assert list(columns) == ["State", "Replicas", "Active", "Progress", "ETA", "Age"]
        assert columns["Progress"] == ".status.trainerStatus.progressPercentage"
        assert columns["ETA"] == ".status.trainerStatus.estimatedRemainingSeconds"
    scale = by_kind["PyTorchJob"]["spec"]["versions"][0]["subresources"]["scale"]
    assert scale == {
        "specReplicasPath": ".spec.pytorchReplicaSpecs.Worker.replicas",
        "statusReplicasPath": ".status.replicaStatuses.Worker.active",
        "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
    }
    assert "scale" not in by_kind["TFJob"]["spec"]["versions"][0]["subresources"]


def test_templates_are_preserved_and_quantities_int_or_string() -> None:
    schema = schema_of(next(c for c in job_crds() if c["spec"]["names"]["kind"] == "PyTorchJob"))
    replica = schema["properties"]["spec"]["properties"]["pytorchReplicaSpecs"]["additionalProperties"]
    template = replica["properties"]["template"]
    assert "kubectl explain pod.spec" in template.pop("description")
    # open, but for the skeleton carrying PodSpec's list keys (kubetrain.jobs.podlistkeys)
    assert template.pop("properties").keys() == {"spec"}
    assert template == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert replica["properties"]["restartPolicy"]["enum"] == ["Always", "OnFailure", "Never", "ExitCode"]
    sched = schema["properties"]["spec"]["properties"]["runPolicy"]["properties"]["schedulingPolicy"]
    assert sched["properties"]["minResources"]["additionalProperties"]["x-kubernetes-int-or-string"] is True
    metrics = schema["properties"]["spec"]["properties"]["elasticPolicy"]["properties"]["metrics"]
    assert metrics["items"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


@pytest.mark.parametrize("crd", CRDS, ids=IDS)
def test_committed_file_matches_generator(crd: dict[str, Any]) -> None:
    committed = ROOT / "crds" / crd_file_name(crd)
    assert committed.read_text() == render_crd(crd)
    assert yaml.safe_load(committed.read_text()) == crd


def test_kubeflow_group_crds_are_our_kinds_in_kubeflows_group(capsys: pytest.CaptureFixture[str]) -> None:
    """`kubetrain crds --group kubeflow.org`: the job kinds only (TrainingPolicy stays
    kubetrain.io's), same schema and subresources, no short names (kubectl's `tfj` stays
    unambiguous), and the label the operator's start-up check looks for."""
    from kubetrain.cli import main

    ours = {c["spec"]["names"]["kind"]: c for c in job_crds()}
    theirs = all_crds("kubeflow.org")
    assert [c["metadata"]["name"] for c in theirs] == [
        f"{c['spec']['names']['plural']}.kubeflow.org" for c in ours.values()
    ]
    for crd in theirs:
        twin = ours[crd["spec"]["names"]["kind"]]
        assert crd["spec"]["group"] == "kubeflow.org"
        assert crd["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kubetrain"
        assert "shortNames" not in crd["spec"]["names"]
        fw = FRAMEWORKS[crd["spec"]["names"]["kind"]]
        # Same schema, but for runPolicy.progressDeadlineSeconds and startDeadlineSeconds:
        # kubeflow.org jobs declare those deadlines with annotations, so Kubeflow's runPolicy
        # keeps its fields.
        twin_versions = copy.deepcopy(twin["spec"]["versions"])
        twin_run_policy = twin_versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        for name in ("progressDeadlineSeconds", "startDeadlineSeconds"):
            field = twin_run_policy["runPolicy"]["properties"].pop(name)
            assert field.pop("description")
            assert field == {"minimum": 1, "type": "integer"}
        # The stored version is that, under the framework's kubeflow.org name (MPIJob:
        # mpi-operator's v2beta1) ...
        stored, *converted = crd["spec"]["versions"]
        assert stored == {**twin_versions[0], "name": fw.kubeflow_version}
        # ... and further versions are served through the conversion webhook at /convert.
        assert [v["name"] for v in converted] == list(fw.kubeflow_converted_versions)
        for version in converted:
            assert version["served"] is True and version["storage"] is False
            assert version["subresources"] == stored["subresources"]
            run_policy = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["runPolicy"]
            assert "progressDeadlineSeconds" not in run_policy["properties"]
            assert "startDeadlineSeconds" not in run_policy["properties"]
        if converted:
            webhook = crd["spec"]["conversion"]["webhook"]
            assert crd["spec"]["conversion"]["strategy"] == "Webhook"
            assert webhook["conversionReviewVersions"] == ["v1"]
            assert webhook["clientConfig"]["service"]["path"] == "/convert"
        else:
            assert "conversion" not in crd["spec"]
        kubernetes_validate.validate(crd, "1.34", strict=True)
    assert main(["crds", "--group", "kubeflow.org"]) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert [d["metadata"]["name"] for d in printed] == [c["metadata"]["name"] for c in theirs]


def test_mpijob_v1_schema_is_training_operators_layout() -> None:
    """mpijobs.kubeflow.org's v1 version has training-operator's fields (mainContainer, the
    spec-level cleanPodPolicy) and none of v2beta1's own."""
    (mpi,) = [c for c in all_crds("kubeflow.org") if c["spec"]["names"]["kind"] == "MPIJob"]
    versions = {
        v["name"]: v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        for v in mpi["spec"]["versions"]
    }
    assert set(versions["v1"]) == {
        "slotsPerWorker",
        "cleanPodPolicy",
        "mainContainer",
        "mpiReplicaSpecs",
        "runPolicy",
    }
    assert {"sshAuthMountPath", "mpiImplementation", "launcherCreationPolicy", "runLauncherAsWorker"} <= set(
        versions["v2beta1"]
    )
    assert not {"mainContainer", "cleanPodPolicy"} & set(versions["v2beta1"])


# mpi-operator v0.8.2's manifests/base/kubeflow.org_mpijobs.yaml, outside the pod templates.
MPI_OPERATOR_FORMATS = {
    ".spec.mpiReplicaSpecs[*].replicas": "int32",
    ".spec.runPolicy.activeDeadlineSeconds": "int64",
    ".spec.runPolicy.backoffLimit": "int32",
    ".spec.runPolicy.schedulingPolicy.minAvailable": "int32",
    ".spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds": "int32",
    ".spec.runPolicy.ttlSecondsAfterFinished": "int32",
    ".spec.slotsPerWorker": "int32",
    ".status.completionTime": "date-time",
    ".status.conditions[].lastTransitionTime": "date-time",
    ".status.conditions[].lastUpdateTime": "date-time",
    ".status.lastReconcileTime": "date-time",
    ".status.replicaStatuses[*].active": "int32",
    ".status.replicaStatuses[*].failed": "int32",
    ".status.replicaStatuses[*].succeeded": "int32",
    ".status.startTime": "date-time",
    **{
        f".spec.mpiReplicaSpecs[*].template.spec.{kind}[].{path}": "int32"
        for kind in ("containers", "initContainers", "ephemeralContainers")
        for path in ("ports[].containerPort", "restartPolicyRules[].exitCodes.values[]")
    },
}


def test_mpijob_v2beta1_declares_mpi_operators_formats() -> None:
    """What mpi-operator's CRD declares as `format` (an API server enforces the integer ranges;
    clients see the types), and no other format; inside the open pod template, those of the
    list keys and set items kubetrain describes (mpi-operator's CRD has them too)."""
    (mpi,) = [c for c in all_crds("kubeflow.org") if c["spec"]["names"]["kind"] == "MPIJob"]
    (v2,) = [v for v in mpi["spec"]["versions"] if v["name"] == "v2beta1"]
    formats = {
        path: node["format"] for path, node in nodes(v2["schema"]["openAPIV3Schema"]) if "format" in node
    }
    assert formats == MPI_OPERATOR_FORMATS
