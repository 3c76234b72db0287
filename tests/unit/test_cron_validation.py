"""Admission rules of a cron: every problem at once, at the cron's own field paths."""

from __future__ import annotations

from typing import Any

import pytest
from crons import kubedl_cron, template_of, training_cron

from kubetrain.cron.shape import MAX_CRON_NAME, validate_cron
from kubetrain.frameworks.registry import FRAMEWORKS


def errors(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_cron(obj)]


@pytest.mark.parametrize("kind", list(FRAMEWORKS))
def test_a_cron_of_every_job_kind_is_valid(kind: str) -> None:
    replicas = {"MPIJob": {"Launcher": 1, "Worker": 1}, "PyTorchJob": {"Master": 1, "Worker": 1}}
    replicas["XGBoostJob"] = replicas["PyTorchJob"]
    template = template_of(kind, replicas.get(kind, {"Worker": 1}))
    assert errors(training_cron(template=template)) == []
    assert errors(kubedl_cron(template=template)) == []


def test_kubeflow_group_template_is_valid() -> None:
    template = template_of(api_version="kubeflow.org/v1")
    assert errors(training_cron(template=template)) == []


def test_bad_schedule_is_refused_naming_spec_schedule() -> None:
    assert errors(training_cron(schedule="61 * * * *")) == [
        'spec.schedule: Invalid: "61 * * * *": minute field: 61 is above the maximum 59 (in "61")'
    ]
    assert errors(kubedl_cron(schedule="every day"))[0].startswith("spec.schedule: Invalid:")


def test_fields_of_batch_v1_are_checked() -> None:
    obj = training_cron(
        timeZone="Moon/Base",
        startingDeadlineSeconds=-1,
        successfulJobsHistoryLimit=-2,
        concurrencyPolicy="Sometimes",
    )
    found = errors(obj)
    assert any(e.startswith('spec.timeZone: Invalid: unknown time zone "Moon/Base"') for e in found)
    assert "spec.startingDeadlineSeconds: Invalid: must be greater than or equal to 0, got -1" in found
    assert "spec.successfulJobsHistoryLimit: Invalid: must be greater than or equal to 0, got -2" in found
    assert any(e.startswith('spec.concurrencyPolicy: NotSupported: "Sometimes"') for e in found), found


def test_template_problems_are_reported_at_the_crons_paths() -> None:
    template = template_of()
    template["metadata"] = {"name": "fixed"}
    template["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    found = errors(training_cron(template=template))
    assert any(e.startswith("spec.template.metadata.name: Forbidden:") for e in found), found
    found = errors(
        training_cron(
            template={
                **template_of(),
                "metadata": {},
                "spec": {
                    "pytorchReplicaSpecs": {
                        "Master": {
                            "replicas": 2,
                            "template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}},
                        }
                    }
                },
            }
        )
    )
    assert any(
        e.startswith("spec.template.spec.pytorchReplicaSpecs[Master].replicas: Forbidden:") for e in found
    ), found
    found = errors(kubedl_cron(template={**template_of(), "spec": {"pytorchReplicaSpecs": {}}}))
    assert any(e.startswith("spec.template.workload.spec.pytorchReplicaSpecs: Required") for e in found), (
        found
    )


def test_template_kind_and_group() -> None:
    found = errors(training_cron(template={**template_of(), "kind": "Deployment"}))
    assert any(e.startswith("spec.template.kind: NotSupported") for e in found), found
    found = errors(training_cron(template={**template_of(), "apiVersion": "batch/v1"}))
    assert any(e.startswith("spec.template.apiVersion: NotSupported") for e in found), found
    found = errors(training_cron(template={k: v for k, v in template_of().items() if k != "kind"}))
    assert any(e.startswith("spec.template.kind: Required") for e in found), found


def test_name_leaves_room_for_the_job_suffix() -> None:
    one_pod = template_of("TFJob", {"Worker": 1})  # pods <job>-worker-0: 9 characters more
    assert errors(training_cron(name="a" * (MAX_CRON_NAME - 9), template=one_pod)) == []
    found = errors(training_cron(name="a" * (MAX_CRON_NAME - 8), template=one_pod))
    assert len(found) == 1 and found[0].startswith("metadata.name: Invalid:"), found
    assert "use at most 45 characters for this cron" in found[0]
    found = errors(training_cron(name="a" * (MAX_CRON_NAME + 1), template=one_pod))
    assert found[0].startswith("metadata.name: Invalid:") and "at most 54 characters" in found[0]


def test_kubedl_deadline_must_be_a_time() -> None:
    assert errors(kubedl_cron(deadline="2030-01-01T00:00:00Z")) == []
    assert errors(kubedl_cron(deadline="tomorrow")) == [
        "spec.deadline: Invalid: must be an RFC 3339 time such as 2030-01-01T00:00:00Z"
    ]


def test_not_an_object() -> None:
    assert errors({"apiVersion": "kubetrain.io/v1", "kind": "TrainingCron", "spec": "x"})[0].startswith(
        "spec"
    )


@pytest.mark.parametrize("prefix", ["CRON_TZ=Asia/Shanghai", "TZ=Asia/Shanghai"])
def test_kubedls_cron_takes_its_time_zone_in_the_schedule(prefix: str) -> None:
    # KubeDL parses the schedule with robfig/cron v3's ParseStandard, which reads a leading
    # TZ=/CRON_TZ= zone: KubeDL's only way to a time zone. TrainingCron (batch/v1) refuses it.
    assert errors(kubedl_cron(schedule=f"{prefix} 0 2 * * *")) == []
    assert "use the timeZone field" in errors(training_cron(schedule=f"{prefix} 0 2 * * *"))[0]


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("CRON_TZ=Mars/Olympus 0 2 * * *", 'unknown time zone "Mars/Olympus"'),
        ("CRON_TZ=Asia/Shanghai", "the schedule must follow the time zone"),
        ("CRON_TZ=Asia/Shanghai 61 2 * * *", "minute field: 61 is above the maximum 59"),
    ],
)
def test_a_bad_time_zone_prefix_is_refused_naming_spec_schedule(schedule: str, message: str) -> None:
    (error,) = errors(kubedl_cron(schedule=schedule))
    assert error.startswith("spec.schedule: Invalid:") and message in error
