"""A runtime's `mlPolicy.torch.envInjection` is admitted by Trainer 2.3's CRD rules
(trainingruntime_types.go: EnvInjection, EnvInjectionTarget): `containerNames` never names the
`node` container (its CEL rule and message), 1 to 8 distinct names of at most 63 characters,
at most 16 targets, one per `jobName`. The containers Trainer's own plug-in tests inject into
(torch_test.go: `preflight-check`, `nccl-check`, `driver-check`, `sidecar`) are admitted."""

from __future__ import annotations

from typing import Any

import pytest
from admission import review_of
from trainjobs import trainer_test_runtime

from kubetrain.jobs.trainjob.envinjection import NODE_MESSAGE
from kubetrain.jobs.trainjob.runtimerules import validate_runtime
from kubetrain.webhook.trainer import validate_trainer

Obj = dict[str, Any]
PATH = "spec.mlPolicy.torch.envInjection.targets"


def runtime(*targets: Obj) -> Obj:
    rt = trainer_test_runtime("torch", kind="ClusterTrainingRuntime")
    rt["apiVersion"] = "trainer.kubeflow.org/v1alpha1"
    rt["spec"]["mlPolicy"] = {"numNodes": 1, "torch": {"envInjection": {"targets": list(targets)}}}
    return rt


@pytest.mark.parametrize(
    "targets",
    [
        # Trainer's torch_test.go targets
        [{"jobName": "node", "containerNames": ["preflight-check"]}],
        [{"jobName": "node", "containerNames": ["nccl-check", "driver-check"]}],
        [
            {"jobName": "node", "containerNames": ["sidecar"]},
            {"jobName": "worker", "containerNames": ["worker-check"]},
        ],
        [],
    ],
)
def test_targets_of_other_containers_are_admitted(targets: list[Obj]) -> None:
    assert validate_runtime(runtime(*targets)) == []


@pytest.mark.parametrize(
    "target",
    [
        {"jobName": "node", "containerNames": ["node"]},
        {"jobName": "node", "containerNames": ["preflight-check", "node"]},
        # the CEL rule reads the names only: a `node` container of another job too
        {"jobName": "warmup", "containerNames": ["node"]},
    ],
)
def test_container_names_never_name_node(target: Obj) -> None:
    errors = validate_runtime(runtime(target))
    assert [(e.path, e.kind.value) for e in errors] == [(f"{PATH}[0].containerNames", "Invalid")]
    assert errors[0].message == NODE_MESSAGE
    assert NODE_MESSAGE == (
        "containerNames must not include the main node container because PET_* envs are always "
        "injected into it"
    )


def test_the_webhook_refuses_it_naming_the_field() -> None:
    rt = runtime(
        {"jobName": "node", "containerNames": ["sidecar"]}, {"jobName": "init", "containerNames": ["node"]}
    )
    response = validate_trainer(review_of(rt))
    assert not response.allowed
    assert response.message == (
        f'ClusterTrainingRuntime "torch" is invalid: {PATH}[1].containerNames: Invalid: {NODE_MESSAGE}'
    )
    assert validate_trainer(review_of(runtime({"jobName": "node", "containerNames": ["sidecar"]}))).allowed


@pytest.mark.parametrize(
    ("targets", "want"),
    [
        ([{"jobName": "node"}], [(f"{PATH}[0].containerNames", "Required")]),
        ([{"jobName": "node", "containerNames": []}], [(f"{PATH}[0].containerNames", "Invalid")]),
        (
            [{"jobName": "node", "containerNames": [f"c{i}" for i in range(9)]}],
            [(f"{PATH}[0].containerNames", "Invalid")],
        ),
        ([{"jobName": "node", "containerNames": ["x" * 64]}], [(f"{PATH}[0].containerNames[0]", "Invalid")]),
        (
            [{"jobName": "node", "containerNames": ["a", "a"]}],
            [(f"{PATH}[0].containerNames[1]", "Duplicate")],
        ),
        ([{"containerNames": ["a"]}], [(f"{PATH}[0].jobName", "Required")]),
        ([{"jobName": "j" * 254, "containerNames": ["a"]}], [(f"{PATH}[0].jobName", "Invalid")]),
        (
            [{"jobName": "node", "containerNames": ["a"]}, {"jobName": "node", "containerNames": ["b"]}],
            [(f"{PATH}[1].jobName", "Duplicate")],
        ),
        ([{"jobName": f"j{i}", "containerNames": ["a"]} for i in range(17)], [(PATH, "Invalid")]),
        ([{"jobName": f"j{i}", "containerNames": ["a"]} for i in range(16)], []),
    ],
)
def test_trainers_crd_markers(targets: list[Obj], want: list[tuple[str, str]]) -> None:
    """MinItems/MaxItems/items MaxLength/listType=set on containerNames, MinLength/MaxLength on
    jobName, MaxItems and listType=map (key jobName) on targets."""
    assert [(e.path, e.kind.value) for e in validate_runtime(runtime(*targets))] == want


def test_a_container_named_twice_is_a_duplicate_value_printed_as_the_api_server_prints_it() -> None:
    """listType=set: the API server's `Duplicate value: "a"` (a Go-quoted string), not Python's 'a'."""
    rt = runtime({"jobName": "node", "containerNames": ["a", 'b"c', "a", 'b"c']})
    assert [str(e) for e in validate_runtime(rt)] == [
        f'{PATH}[0].containerNames[2]: Duplicate: "a"',
        f'{PATH}[0].containerNames[3]: Duplicate: "b\\"c"',
    ]
