"""parse_job: kind dispatch, Kubernetes-style error paths, lossless round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.api.errors import ErrorKind
from kubetrain.api.mxjob import MXJob
from kubetrain.api.pytorchjob import PyTorchJob
from kubetrain.api.tfjob import TFJob
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.parse import InvalidJobError, parse_job

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return data


@pytest.mark.parametrize(
    ("name", "model"),
    [("tf-ps.yaml", TFJob), ("pytorch-ddp.yaml", PyTorchJob), ("mxnet-dist.yaml", MXJob)],
)
def test_parse_dispatches_on_kind(name: str, model: type) -> None:
    assert isinstance(parse_job(example(name)), model)


def errors(obj: dict[str, Any]) -> list[tuple[str, ErrorKind]]:
    with pytest.raises(InvalidJobError) as info:
        parse_job(obj)
    assert not isinstance(info.value.__cause__, Exception)  # pydantic's error is not chained
    return [(e.path, e.kind) for e in info.value.errors]


def pt(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kubetrain.io/v1", "kind": "PyTorchJob", "metadata": {"name": "a"}, "spec": spec}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            pt(pytorchReplicaSpecs={"Master": {"replicas": "1"}}),
            ("spec.pytorchReplicaSpecs[Master].replicas", ErrorKind.INVALID),
        ),
        (
            pt(pytorchReplicaSpecs={"Master": {"replicas": True}}),
            ("spec.pytorchReplicaSpecs[Master].replicas", ErrorKind.INVALID),
        ),
        (
            pt(runPolicy={"cleanPodPolicy": "Sometimes"}),
            ("spec.runPolicy.cleanPodPolicy", ErrorKind.NOT_SUPPORTED),
        ),
        (pt(runPolicy={"suspend": "yes"}), ("spec.runPolicy.suspend", ErrorKind.INVALID)),
        (
            pt(elasticPolicy={"rdzvConf": [{"key": 1}]}),
            ("spec.elasticPolicy.rdzvConf[0].key", ErrorKind.INVALID),
        ),
        (
            pt(runPolicy={"schedulingPolicy": {"minResources": {"cpu": [1]}}}),
            ("spec.runPolicy.schedulingPolicy.minResources[cpu]", ErrorKind.INVALID),
        ),
        (
            pt(pytorchReplicaSpecs={"Worker": {"replica": 2}}),
            ("spec.pytorchReplicaSpecs[Worker].replica", ErrorKind.INVALID),
        ),
        (pt(pytorchReplicaSpecs=[]), ("spec.pytorchReplicaSpecs", ErrorKind.INVALID)),
        ({"apiVersion": "kubetrain.io/v1", "kind": "TFJob", "metadata": {}}, ("spec", ErrorKind.REQUIRED)),
    ],
)
def test_errors_have_kubernetes_paths(obj: dict[str, Any], expected: tuple[str, ErrorKind]) -> None:
    assert expected in errors(obj)


def test_messages_are_ours_not_pydantics() -> None:
    with pytest.raises(InvalidJobError) as info:
        parse_job(pt(pytorchReplicaSpecs={"Worker": {"replica": 2, "restartPolicy": "Maybe"}}))
    text = str(info.value)
    assert "Input should be" not in text and "Extra inputs" not in text
    assert 'unknown field "replica" (did you mean "replicas"?)' in text
    assert '"Always", "OnFailure", "Never", "ExitCode"' in text


def test_kind_and_api_version_errors() -> None:
    assert errors({"apiVersion": "kubetrain.io/v1", "kind": "Pod"}) == [("kind", ErrorKind.NOT_SUPPORTED)]
    assert errors({"kind": "TFJob"}) == [("apiVersion", ErrorKind.REQUIRED)]
    with pytest.raises(InvalidJobError, match="changing apiVersion"):
        parse_job({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {}}, groups=("kubetrain.io",))


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_round_trip_is_lossless(name: str) -> None:
    wire = default_job(example(name)).obj
    wire["status"] = {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "JobCreated",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ],
        "replicaStatuses": {"Worker": {"active": 1, "selector": "kubetrain.io/job-name=x"}},
        "startTime": "2024-01-01T00:00:00Z",
    }
    model = parse_job(wire)
    again = json.loads(json.dumps(model.to_dict()))
    assert again == wire
    assert parse_job(again) == model


def test_unknown_template_fields_survive_a_round_trip() -> None:
    obj = default_job(example("pytorch-ddp.yaml")).obj
    template = obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    template["spec"]["someFutureField"] = {"nested": [1, 2]}
    template["metadata"] = {"annotations": {"sidecar.istio.io/inject": "false"}}
    back = parse_job(obj).to_dict()
    assert back["spec"]["pytorchReplicaSpecs"]["Worker"]["template"] == template
