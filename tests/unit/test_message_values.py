"""A value the user wrote prints in a message as Kubernetes prints the bad value of a field error
(Go's `field.Error`): a string in double quotes with its escapes, null, true/false and numbers
bare, a list or an object as compact JSON — never Python's repr ('Some', None, True,
{'cpu': '1'}). The same text reaches the AdmissionReview's message and `kubetrain validate`'s
output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubetrain.api.errors import not_supported
from kubetrain.cli import main
from kubetrain.webhook.decider import Decider
from kubetrain.webhook.review import request_review

STRINGS = [
    pytest.param("Some", '"Some"', id="string"),
    pytest.param("Sömé 日本", '"Sömé 日本"', id="non-ascii"),
    pytest.param('a"b\\c\n', '"a\\"b\\\\c\\n"', id="escaped"),
]
OTHERS = [
    pytest.param(True, "true", id="bool"),
    pytest.param(3, "3", id="integer"),
    pytest.param(2.5, "2.5", id="float"),
    pytest.param({"cpu": "1", "memory": "2Gi"}, '{"cpu":"1","memory":"2Gi"}', id="object"),
    pytest.param(["All"], '["All"]', id="list"),
]
NULL = pytest.param(None, "null", id="null")
CLEAN_POD_POLICIES = '"All", "Running", "None"'


def pytorchjob(run_policy: dict[str, Any], cpu: Any = "1") -> dict[str, Any]:
    container = {"name": "pytorch", "image": "busybox", "resources": {"limits": {"cpu": cpu}}}
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "quoted", "namespace": "team-a"},
        "spec": {
            "runPolicy": run_policy,
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}}
            },
        },
    }


def training_policy(kinds: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TrainingPolicy",
        "metadata": {"name": "quoted"},
        "spec": {"kinds": kinds},
    }


def webhook_message(obj: dict[str, Any]) -> str:
    """The validating webhook's answer to kube-apiserver's AdmissionReview for `obj`, as bytes on
    the wire: the refusal's message."""
    _, answer, _ = Decider().answer(orjson.dumps(request_review(obj)), "validate")
    response = orjson.loads(answer)["response"]
    assert response["allowed"] is False
    return str(response["status"]["message"])


def validate_output(tmp_path: Path, obj: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    """What `kubetrain validate job.yaml` prints for `obj` (written as YAML), the file's path
    shortened to its name."""
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(obj, allow_unicode=True), encoding="utf-8")
    assert main(["validate", str(manifest)]) == 1
    return capsys.readouterr().out.replace(str(manifest), manifest.name)


@pytest.mark.parametrize(("value", "shown"), [*STRINGS, *OTHERS, NULL])
def test_a_not_supported_error_prints_the_value_and_the_valid_ones_alike(value: Any, shown: str) -> None:
    error = not_supported("spec.runPolicy.cleanPodPolicy", value, ["All", "Running", "None"])
    assert str(error) == (
        f"spec.runPolicy.cleanPodPolicy: NotSupported: {shown} is not supported: must be one of "
        f"{CLEAN_POD_POLICIES}"
    )


@pytest.mark.parametrize(("value", "shown"), [*STRINGS, *OTHERS])
def test_the_webhook_refuses_an_unsupported_value_printing_it_as_kubernetes_does(
    value: Any, shown: str
) -> None:
    message = webhook_message(pytorchjob({"cleanPodPolicy": value}))
    assert message == (
        'PyTorchJob "quoted" is invalid: spec.runPolicy.cleanPodPolicy: NotSupported: '
        f"{shown} is not supported: must be one of {CLEAN_POD_POLICIES}"
    )


@pytest.mark.parametrize(("value", "shown"), [*STRINGS, *OTHERS])
def test_kubetrain_validate_prints_an_unsupported_value_as_the_webhook_does(
    value: Any, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = validate_output(tmp_path, pytorchjob({"cleanPodPolicy": value}), capsys)
    assert out == (
        "job.yaml#1 (PyTorchJob/quoted): spec.runPolicy.cleanPodPolicy: NotSupported: "
        f"{shown} is not supported: must be one of {CLEAN_POD_POLICIES}\n"
    )


@pytest.mark.parametrize(("value", "shown"), STRINGS)
def test_an_invalid_quantity_is_printed_quoted_by_the_webhook_and_validate(
    value: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = (
        "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].resources.limits[cpu]: Invalid: "
        f'{shown} is not a valid quantity: use e.g. "500m", "2", "1.5", "16Gi", "1e3"'
    )
    job = pytorchjob({}, cpu=value)
    assert webhook_message(job) == f'PyTorchJob "quoted" is invalid: {line}'
    assert validate_output(tmp_path, job, capsys) == f"job.yaml#1 (PyTorchJob/quoted): {line}\n"


@pytest.mark.parametrize(("value", "shown"), [*OTHERS, NULL])
def test_an_invalid_value_of_another_json_type_is_printed_as_json(
    value: Any, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = f"spec.kinds[0]: Invalid: {shown}: Input should be a valid string"
    policy = training_policy([value])
    assert webhook_message(policy) == f'TrainingPolicy "quoted" is invalid: {line}'
    assert validate_output(tmp_path, policy, capsys) == f"job.yaml#1 (TrainingPolicy/quoted): {line}\n"
