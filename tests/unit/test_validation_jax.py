"""JAXJob validation (docs/behaviour.md §3): what Kubeflow v1.9's webhook refuses
(`pkg/webhooks/jax/jaxjob_webhook.go`, validateJAXJob and validateJAXReplicaSpecs — the cases of
its jaxjob_webhook_test.go), every error at once with its field path, and what would fail or do
nothing at run time."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jobs
import pytest

from kubetrain.api.errors import ErrorKind
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job

R = "spec.jaxReplicaSpecs"
Job = dict[str, Any]


def rspec(replicas: int | None, *names: str) -> dict[str, Any]:
    return jobs.replica(
        "JAXJob",
        replicas,
        containers=jobs.containers(*names, image="docker.io/kubeflow/jaxjob-simple:latest"),
    )


VALID: Job = jobs.job("JAXJob", "jaxjob-simple", {"Worker": rspec(2, "jax")})


def errors(change: Callable[[Job], Any]) -> list[tuple[str, ErrorKind]]:
    return jobs.field_errors(VALID, change)


def worker(obj: Job) -> dict[str, Any]:
    return obj["spec"]["jaxReplicaSpecs"]["Worker"]  # type: ignore[no-any-return]


def test_valid_job_passes_without_warnings() -> None:
    assert errors(lambda j: None) == []
    assert errors(lambda j: worker(j).pop("replicas")) == []  # defaulted to 1
    assert validate_job(default_job(VALID).obj).warnings == []


@pytest.mark.parametrize(
    ("case", "change", "expected"),
    [
        (
            "name not DNS-1035",
            lambda j: j["metadata"].update(name="jax.job"),
            [("metadata.name", ErrorKind.INVALID)],
        ),
        (
            "no containers",
            lambda j: worker(j)["template"]["spec"].update(containers=[]),
            [(f"{R}[Worker].template.spec.containers", ErrorKind.REQUIRED)],
        ),
        (
            "image empty",
            lambda j: worker(j)["template"]["spec"]["containers"][0].update(image=""),
            [(f"{R}[Worker].template.spec.containers[0].image", ErrorKind.REQUIRED)],
        ),
        (
            "no container named jax",
            lambda j: j["spec"]["jaxReplicaSpecs"].update(Worker=rspec(2, "trainer")),
            [(f"{R}[Worker].template.spec.containers", ErrorKind.REQUIRED)],
        ),
        ("no replica map", lambda j: j["spec"].pop("jaxReplicaSpecs"), [(R, ErrorKind.REQUIRED)]),
        (
            "unknown type",
            lambda j: j["spec"]["jaxReplicaSpecs"].update(Master=rspec(1, "jax")),
            [(f"{R}[Master]", ErrorKind.NOT_SUPPORTED)],
        ),
        # kubetrain's own: a JAXJob without processes would run nothing.
        (
            "zero Workers",
            lambda j: worker(j).update(replicas=0),
            [(f"{R}[Worker].replicas", ErrorKind.INVALID)],
        ),
        # Would fail at run time: pod <name>-worker-1 longer than 63 characters.
        (
            "pod name too long",
            lambda j: j["metadata"].update(name="j" * 55),
            [("metadata.name", ErrorKind.INVALID)],
        ),
    ],
)
def test_refused(case: str, change: Callable[[Job], Any], expected: list[tuple[str, ErrorKind]]) -> None:
    assert errors(change) == expected, case


def test_every_error_at_once_with_messages() -> None:
    obj = copy.deepcopy(VALID)
    obj["metadata"]["name"] = "Jax"
    obj["spec"]["jaxReplicaSpecs"] = {"Worker": rspec(0, "main", ""), "Coordinator": rspec(1, "jax")}
    obj["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][1]["name"] = "second"
    obj["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][1]["image"] = ""
    lines = sorted(str(e) for e in validate_job(default_job(obj).obj).errors)
    assert len(lines) == 5, lines
    assert lines[0].startswith('metadata.name: Invalid: "Jax" is not a DNS-1035 label')
    assert lines[1] == (
        f'{R}[Coordinator]: NotSupported: "Coordinator" is not supported: must be one of "Worker"'
    )
    assert lines[2] == (
        f"{R}[Worker].replicas: Invalid: must be at least 1 "
        "(one JAX process per Worker; Worker 0 is the coordinator)"
    )
    assert lines[3] == (
        f'{R}[Worker].template.spec.containers: Required: must have a container named "jax" '
        "(JAXJob pods get their jaxjob-port port and cluster environment there)"
    )
    assert (
        lines[4] == f"{R}[Worker].template.spec.containers[1].image: Required: every container needs an image"
    )
