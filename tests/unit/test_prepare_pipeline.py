"""The controller's pipeline (operator/prepare.py): parse once → default → validate → lay out.

A job stored without the webhooks (or before they ran) must be prepared exactly as the webhooks
default and validate it; the parse stage reads the job once without changing it; KubeDL's
annotations are parsed once into typed values whose errors are those validation reports."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubetrain.api.labels import annotations_of
from kubetrain.api.manifests import load_all
from kubetrain.jobs.codesync import CodeSync
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.jobdraft import read_job
from kubetrain.jobs.kubedl import read_kubedl_annotations
from kubetrain.jobs.kubedllayout import layout_errors, to_v1
from kubetrain.jobs.tensorboard import TensorBoardConfig
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.prepare import prepare_job
from tests.jobs import job

KUBEDL = Path(__file__).resolve().parents[1] / "data" / "kubedl" / "example"
TENANCY = "kubedl.io/tenancy"
GIT_SYNC = "kubedl.io/git-sync-config"
TB = "kubedl.io/tensorboard-config"
SYNC = {"source": "https://github.com/kubetrain/examples.git"}
BOARD = {"logDir": "/runs", "image": "tensorflow/tensorflow:2.16.1"}


def kubedl_jobs() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(KUBEDL.rglob("*.yaml")):
        for doc in load_all(path.read_text()):
            if str(doc.get("kind", "")).endswith("Job"):
                out.append((str(path.relative_to(KUBEDL)), doc))
    return out


def variants() -> list[tuple[str, dict[str, Any]]]:
    """KubeDL's examples, and jobs whose fields and annotations take every branch of the stages."""
    cases = kubedl_jobs()
    inline = copy.deepcopy(dict(cases)["tf/tf_job_mnist.yaml"])
    inline["spec"].update(
        backoffLimit=3,
        schedulingPolicy={"priorityClassName": "high", "minAvailable": 1},
        runPolicy={"ttlSecondsAfterFinished": 60},
    )
    cases.append(("kubedl inline and runPolicy", inline))
    refused = copy.deepcopy(inline)
    refused["spec"].update(cronPolicy={"schedule": "* * * * *"}, mainContainer="other")
    refused["spec"]["schedulingPolicy"]["priority"] = 5
    cases.append(("kubedl refused fields", refused))
    annotated = job("PyTorchJob", replicas={"Master": 1, "Worker": 2})
    annotated["metadata"]["annotations"] = {
        TENANCY: json.dumps({"tenant": "vision", "user": "ana"}),
        GIT_SYNC: json.dumps(SYNC),
        TB: json.dumps(BOARD),
    }
    cases.append(("kubetrain.io annotated", annotated))
    bad = copy.deepcopy(annotated)
    bad["metadata"]["annotations"] = {TENANCY: "{tenant: x}", GIT_SYNC: "[]", TB: json.dumps({"logDir": 7})}
    cases.append(("kubetrain.io bad annotations", bad))
    invalid = job("TFJob", replicas={"Worker": -1, "Chief": "two"})
    cases.append(("kubetrain.io invalid", invalid))
    return cases


KINDS = '"TFJob", "PyTorchJob", "MXJob", "XGBoostJob", "JAXJob", "PaddleJob", "MPIJob"'


@pytest.mark.parametrize(("name", "obj"), variants(), ids=[n for n, _ in variants()])
def test_the_controller_prepares_a_job_as_the_webhooks_default_and_validate_it(
    name: str, obj: dict[str, Any]
) -> None:
    before = copy.deepcopy(obj)
    prepared = prepare_job(obj)
    assert obj == before  # the stored job is never changed
    if prepared.framework is None:  # KubeDL's ElasticDLJob, XDLJob: kinds kubetrain does not run
        assert prepared.errors == [
            f"kind: Unsupported value: {json.dumps(obj['kind'])}: must be one of {KINDS}"
        ]
        return
    defaulted = default_job(copy.deepcopy(obj))
    # The defaulted job the planner reads is the webhook's, in kubetrain's layout.
    assert prepared.defaulted == to_v1(defaulted.obj)
    assert prepared.warnings == defaulted.warnings + validate_job(defaulted.obj).warnings
    # The same problems: KubeDL's refused fields, then those of the job in kubetrain's layout.
    webhook = validate_job(to_v1(defaulted.obj)).errors
    assert prepared.errors == [str(e) for e in [*layout_errors(obj), *webhook]]
    assert prepared.valid == (not prepared.errors and prepared.shape is not None)
    if not layout_errors(obj) and not webhook:
        assert prepared.shape is not None


def test_the_parse_stage_reads_a_job_once_without_changing_it() -> None:
    _name, obj = next((n, o) for n, o in variants() if n == "kubedl refused fields")
    obj["status"] = {"conditions": []}
    before = copy.deepcopy(obj)
    draft = read_job(obj)
    assert obj == before
    assert draft.framework is not None and draft.framework.kind == "TFJob"
    assert "status" not in draft.wire
    # kubetrain's layout: the inline run policy moved into runPolicy, a given runPolicy winning.
    assert draft.wire["spec"]["runPolicy"] == {
        "backoffLimit": 3,
        "cleanPodPolicy": "None",
        "schedulingPolicy": {"minAvailable": 1, "priorityClass": "high"},
        "ttlSecondsAfterFinished": 60,
    }
    assert [e.path for e in draft.errors] == [
        "spec.cronPolicy",
        "spec.schedulingPolicy.priority",
        "spec.mainContainer",
    ]
    unknown = read_job({"apiVersion": "kubetrain.io/v1", "kind": "SparkJob", "spec": {}})
    assert unknown.framework is None and unknown.kind == "SparkJob"
    assert prepare_job({"kind": "SparkJob"}).errors == [
        f'kind: Unsupported value: "SparkJob": must be one of {KINDS}'
    ]


def test_the_service_mode_is_read_at_the_parse_stage() -> None:
    obj = job("PyTorchJob", replicas={"Master": 1, "Worker": 1})
    assert read_job(obj).runs_service_mode("headless") == "headless"
    obj["metadata"]["annotations"] = {"kubetrain.io/service-mode": "per-pod"}
    assert read_job(obj).runs_service_mode("headless") == "per-pod"
    obj["metadata"]["annotations"] = {"kubetrain.io/service-mode": "mesh"}
    assert read_job(obj).service_mode == "mesh"
    assert read_job(obj).runs_service_mode("per-pod") == "per-pod"  # invalid: the operator's


def test_kubedl_annotations_are_parsed_once_into_typed_values() -> None:
    _name, obj = next((n, o) for n, o in variants() if n == "kubetrain.io annotated")
    read = read_kubedl_annotations(annotations_of(obj))
    assert read.tenancy == {"tenant": "vision", "user": "ana"}
    assert isinstance(read.code_sync, CodeSync) and read.code_sync.source == SYNC["source"]
    assert isinstance(read.tensorboard, TensorBoardConfig)
    assert read.errors == ()
    assert read_job(obj).kubedl == read
    # The labels defaulting writes come from the parsed fields.
    labels = default_job(obj).obj["metadata"]["labels"]
    assert labels["tenancy.kubetrain.io/tenant"] == "vision"
    assert labels["tenancy.kubetrain.io/user"] == "ana"


def test_malformed_kubedl_annotations_give_no_value_and_errors_in_validation_order() -> None:
    _name, obj = next((n, o) for n, o in variants() if n == "kubetrain.io bad annotations")
    read = read_kubedl_annotations(annotations_of(obj))
    assert (read.tenancy, read.code_sync, read.tensorboard) == (None, None, None)
    paths = [e.path for e in read.errors]
    assert paths[0].startswith(f"metadata.annotations[{TENANCY}]")
    assert any(p.startswith(f"metadata.annotations[{GIT_SYNC}]") for p in paths)
    assert paths[-1].startswith(f"metadata.annotations[{TB}]")
    # Exactly what the validating webhook reports for them, in the same order.
    reported = [
        e
        for e in validate_job(default_job(obj).obj).errors
        if e.path.startswith("metadata.annotations[kubedl")
    ]
    assert reported == list(read.errors)
    # A malformed tenancy annotation leaves the job's labels alone.
    assert "labels" not in default_job(obj).obj["metadata"] or not any(
        k.startswith("tenancy.kubetrain.io/") for k in default_job(obj).obj["metadata"]["labels"]
    )
