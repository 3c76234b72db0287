"""devcluster's validation of a pod's tolerations (kinds/tolerationvalidation.py), with the cases
of upstream's validation_test.go (`TestValidatePod`'s toleration error cases) and its messages."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.kinds import builtins, podvalidation

Obj = dict[str, Any]
LABEL_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def causes(*tolerations: Obj) -> list[tuple[str, str, str]]:
    spec = {"containers": [{"name": "c", "image": "busybox"}], "tolerations": list(tolerations)}
    return [(c.reason, c.field, c.message) for c in podvalidation.pod_spec_causes(spec, creating=True)]


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
        {"operator": "Exists"},  # every taint
        {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoExecute", "tolerationSeconds": 60},
        {"key": "foo", "value": "bar"},  # the empty operator is Equal, the empty effect every effect
        {"key": "example.com/gpu", "operator": "Exists", "effect": "PreferNoSchedule"},
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 0,
        },
    ],
)
def test_valid_tolerations(toleration: Obj) -> None:
    assert causes(toleration) == []


def test_each_rule_with_upstreams_path_and_message() -> None:
    at = "spec.tolerations[0]"
    assert causes(
        {"key": "nospecialchars^=@", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}
    ) == [("FieldValueInvalid", f"{at}.key", f'Invalid value: "nospecialchars^=@": {LABEL_NAME}')]
    assert causes({"key": "foo", "operator": "In", "value": "bar", "effect": "NoSchedule"}) == [
        (
            "FieldValueNotSupported",
            f"{at}.operator",
            'Unsupported value: "In": supported values: "Equal", "Exists"',
        )
    ]
    assert causes({"key": "foo", "operator": "Exists", "value": "bar", "effect": "NoSchedule"}) == [
        (
            "FieldValueInvalid",
            f"{at}.operator",
            "Invalid value: \"bar\": value must be empty when `operator` is 'Exists'",
        )
    ]
    assert causes({"operator": "Equal", "value": "bar", "effect": "NoSchedule"}) == [
        (
            "FieldValueInvalid",
            f"{at}.operator",
            'Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all '
            'values and all keys"',
        )
    ]
    seconds = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}
    assert causes({**seconds, "tolerationSeconds": 20}) == [
        (
            "FieldValueInvalid",
            f"{at}.effect",
            "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        )
    ]
    # A bad value is reported at `.operator` (upstream's path), then the effect.
    assert causes({"key": "foo", "value": "bad value!", "effect": "NoExcute"}) == [
        ("FieldValueInvalid", f"{at}.operator", f'Invalid value: "bad value!": {LABEL_VALUE}'),
        (
            "FieldValueNotSupported",
            f"{at}.effect",
            'Unsupported value: "NoExcute": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
        ),
    ]
    # Every toleration is checked, each at its index.
    assert [c[1] for c in causes({"operator": "Exists"}, {"key": "a b", "operator": "Exists"})] == [
        "spec.tolerations[1].key"
    ]


def update(old: list[Obj], new: list[Obj]) -> list[tuple[str, str, str]]:
    container = {"name": "c", "image": "busybox"}
    before = {"spec": {"containers": [container], "restartPolicy": "Always", "tolerations": old}}
    after = {"spec": {**before["spec"], "tolerations": new}}
    return [(c.reason, c.field, c.message) for c in builtins.validate_pod(after, before)]


def test_an_update_may_add_tolerations_and_change_only_their_seconds() -> None:
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    gone = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    assert update([gpu], [gpu, {"key": "other", "operator": "Exists"}]) == []
    assert update([{**gone, "tolerationSeconds": 300}], [{**gone, "tolerationSeconds": 10}]) == []
    forbidden = [
        (
            "FieldValueForbidden",
            "spec.tolerations",
            "Forbidden: existing toleration can not be modified except its tolerationSeconds",
        )
    ]
    assert update([gpu], []) == forbidden
    assert update([gpu], [{**gpu, "effect": "NoExecute"}]) == forbidden
    # The new list is validated as on create.
    assert update([gpu], [gpu, {"key": "x", "operator": "Exists", "value": "v"}])[0][1] == (
        "spec.tolerations[1].operator"
    )
