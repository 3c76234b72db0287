"""XGBoostJob validation (docs/behaviour.md §3): what Kubeflow v1.9's webhook refuses
(`pkg/webhooks/xgboost/xgboostjob_webhook.go`, validateXGBoostJob and validateXGBReplicaSpecs —
the cases of its xgboostjob_webhook_test.go), every error at once with its field path, and what
would fail at run time."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jobs
import pytest

from kubetrain.api.errors import ErrorKind
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job

R = "spec.xgbReplicaSpecs"
Job = dict[str, Any]


def rspec(replicas: int | None, *names: str) -> dict[str, Any]:
    return jobs.replica(
        "XGBoostJob",
        replicas,
        containers=jobs.containers(*names, image="docker.io/kubeflow/xgboost-dist-iris:latest"),
    )


VALID: Job = jobs.job(
    "XGBoostJob", "xgboost-dist", {"Master": rspec(1, "xgboost"), "Worker": rspec(2, "xgboost")}
)


def errors(change: Callable[[Job], Any]) -> list[tuple[str, ErrorKind]]:
    return jobs.field_errors(VALID, change)


def specs(obj: Job) -> dict[str, Any]:
    return obj["spec"]["xgbReplicaSpecs"]  # type: ignore[no-any-return]


def test_valid_job_and_a_master_alone_pass() -> None:
    assert errors(lambda j: None) == []
    assert errors(lambda j: specs(j).pop("Worker")) == []
    result = validate_job(default_job(VALID).obj)
    assert result.warnings == []


@pytest.mark.parametrize(
    ("case", "change", "expected"),
    [
        (
            "name not DNS-1035",
            lambda j: j["metadata"].update(name="Xgb_1"),
            [("metadata.name", ErrorKind.INVALID)],
        ),
        (
            "no containers",
            lambda j: specs(j)["Master"]["template"]["spec"].update(containers=[]),
            [(f"{R}[Master].template.spec.containers", ErrorKind.REQUIRED)],
        ),
        (
            "image empty",
            lambda j: specs(j)["Master"]["template"]["spec"]["containers"][0].update(image=""),
            [(f"{R}[Master].template.spec.containers[0].image", ErrorKind.REQUIRED)],
        ),
        (
            "no container named xgboost",
            lambda j: specs(j).update(Master=rspec(1, "main", "sidecar")),
            [(f"{R}[Master].template.spec.containers", ErrorKind.REQUIRED)],
        ),
        (
            "two Masters",
            lambda j: specs(j)["Master"].update(replicas=2),
            [(f"{R}[Master].replicas", ErrorKind.FORBIDDEN)],
        ),
        ("no Master", lambda j: specs(j).pop("Master"), [(f"{R}[Master]", ErrorKind.REQUIRED)]),
        (
            "unknown type",
            lambda j: specs(j).update(PS=rspec(1, "xgboost")),
            [(f"{R}[PS]", ErrorKind.NOT_SUPPORTED)],
        ),
        (
            "no replica map",  # Kubeflow, too, reports the missing map and the missing Master
            lambda j: j["spec"].pop("xgbReplicaSpecs"),
            [(R, ErrorKind.REQUIRED), (f"{R}[Master]", ErrorKind.REQUIRED)],
        ),
        # Would fail at run time: pod <name>-worker-1 is 64 characters, over 63.
        (
            "pod name too long",
            lambda j: j["metadata"].update(name="x" * 55),
            [("metadata.name", ErrorKind.INVALID)],
        ),
    ],
)
def test_refused_like_kubeflow(
    case: str, change: Callable[[Job], Any], expected: list[tuple[str, ErrorKind]]
) -> None:
    assert errors(change) == expected, case


def test_every_error_at_once() -> None:
    def many(j: Job) -> None:
        j["metadata"]["name"] = "Bad_Name"
        specs(j)["Master"] = rspec(3, "main")
        specs(j)["Worker"]["template"]["spec"]["containers"][0]["image"] = ""
        specs(j)["Chief"] = rspec(1, "xgboost")

    assert sorted(errors(many)) == sorted(
        [
            ("metadata.name", ErrorKind.INVALID),
            (f"{R}[Chief]", ErrorKind.NOT_SUPPORTED),
            (f"{R}[Master].replicas", ErrorKind.FORBIDDEN),
            (f"{R}[Master].template.spec.containers", ErrorKind.REQUIRED),
            (f"{R}[Worker].template.spec.containers[0].image", ErrorKind.REQUIRED),
        ]
    )


def test_missing_xgboost_container_is_an_error_not_a_default_container_warning() -> None:
    obj = copy.deepcopy(VALID)
    specs(obj)["Worker"] = rspec(2, "trainer")
    defaulted = default_job(obj)
    result = validate_job(defaulted.obj)
    assert defaulted.warnings == [] and result.warnings == []
    (error,) = result.errors
    assert str(error) == (
        f'{R}[Worker].template.spec.containers: Required: must have a container named "xgboost" '
        "(XGBoostJob pods get their xgboostjob-port port and cluster environment there)"
    )


def test_user_setting_an_operator_variable_is_warned() -> None:
    obj = copy.deepcopy(VALID)
    specs(obj)["Worker"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "WORKER_ADDRS", "value": "x"}
    ]
    (warning,) = validate_job(default_job(obj).obj).warnings
    assert "WORKER_ADDRS is also set by kubetrain for XGBoostJob pods" in warning
