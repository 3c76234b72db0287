"""The uniqueness of `x-kubernetes-list-type: map` / `set` lists as devcluster checks custom
resources for it (crds/listtype.py), with the cases and answers of apiextensions-apiserver's
pkg/apiserver/schema/listtype/validation_test.go (`TestValidateListSetsAndMaps`) and the messages
`field.Duplicate` gives; then kubetrain's CRDs, whose list keys are upstream's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import schema as crschema
from kubetrain.devcluster.apiserver.kinds.crds import listtype

CRDS = Path(__file__).resolve().parents[2] / "charts" / "kubetrain" / "files" / "crds"


def lst(list_type: str | None = None, keys: list[str] | None = None, items: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array"}
    if list_type:
        out["x-kubernetes-list-type"] = list_type
    if keys:
        out["x-kubernetes-list-map-keys"] = keys
    if items is not None:
        out["items"] = items
    return out


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def dup(path: str, shown: str) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {shown}", path)


def test_without_a_list_type_or_schema_nothing_is_compared() -> None:
    assert listtype.causes({}, {"array": ["a", "b", "a"]}) == []
    assert listtype.causes(obj(array=lst()), {"array": ["a", "b", "a"]}) == []
    assert listtype.causes(obj(array=lst("atomic")), {"array": ["a", "a"]}) == []


def test_a_set_reports_each_duplicated_value_once_at_its_second_occurrence() -> None:
    schema = obj(array=lst("set"))
    assert listtype.causes(schema, {"array": ["a"]}) == []
    assert listtype.causes(schema, {"array": ["a", "b"]}) == []
    assert listtype.causes(schema, {"array": ["a", "a"]}) == [dup("array[1]", '"a"')]
    assert listtype.causes(schema, {"array": ["a", "a", "b", "c", "d", "c", "a"]}) == [
        dup("array[1]", '"a"'),
        dup("array[5]", '"c"'),
    ]


def test_sets_are_found_under_items_and_additional_properties() -> None:
    nested = obj(array=lst(items=lst("set")))
    assert listtype.causes(nested, {"array": [["a", "b", "a"], ["b", "b"]]}) == [
        dup("array[0][2]", '"a"'),
        dup("array[1][1]", '"b"'),
    ]
    by_key = {"type": "object", "additionalProperties": lst("set")}
    assert listtype.causes(by_key, {"array": ["a", "b", "a"]}) == [dup("[array][2]", '"a"')]
    outer = obj(array=lst("set", items=lst("set")))
    assert listtype.causes(outer, {"array": [["a"], ["b"], ["a"], ["b", "b"]]}) == [
        dup("array[2]", '["a"]'),
        dup("array[3][1]", '"b"'),
    ]


def test_set_items_compare_as_go_values() -> None:
    """Scalars as Go interface values (an int64 is not a float64, nor a bool a number), objects
    and lists by their JSON encoding; the value shown as `ErrorBody` prints it."""
    value = {
        "strings": ["a", "b", "a"],
        "integers": [1, 2, 1],
        "booleans": [False, True, True],
        "float64": [1.0, 2.0, 2.0],
        "nil": ["a", None, None],
        "empty maps": [{"a": "b"}, {}, {}],
        "map values": [{"a": "b"}, {"a": "c"}, {"a": "b"}],
        "nil values": [{"a": None}, {"b": "c", "a": None}],
        "array": [[], ["a"], ["b"], ["a"]],
        "nil array": [[], [None], [None, None], [None], ["a"]],
        "multiple duplicates": [{"a": "b"}, {"a": "c"}, {"a": "b"}, {"a": "c"}, {"a": "c"}],
        "mixed": [1, 1.0, True, "1"],
    }
    schema = obj(**{name: lst("set") for name in value})
    assert listtype.causes(schema, value) == [
        dup("strings[2]", '"a"'),
        dup("integers[2]", "1"),
        dup("booleans[2]", "true"),
        dup("float64[2]", "2"),
        dup("nil[2]", "null"),
        dup("empty maps[2]", "{}"),
        dup("map values[2]", '{"a":"b"}'),
        dup("array[3]", '["a"]'),
        dup("nil array[3]", "[null]"),
        dup("multiple duplicates[2]", '{"a":"b"}'),
        dup("multiple duplicates[3]", '{"a":"c"}'),
    ]


def test_map_lists_compare_the_keys_only() -> None:
    value = {
        "strings": ["a"],
        "not objects": ["a", "b"],
        "one key": [{"a": "0", "c": "2"}, {"a": "1", "c": "1"}, {"a": "1", "c": "2"}, {}],
        "two keys": [
            {"a": "1", "b": "1", "c": "1"},
            {"a": "1", "b": "2", "c": "2"},
            {"a": "1", "b": "2"},
            {},
        ],
        "undefined key": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "c": "2"}, {"a": "1", "c": "3"}, {}],
        "compound key": [{"a": [], "c": "1"}, {"a": None}, {"a": ["a"]}, {"a": ["a", 42]}, {"a": ["a", 42]}],
        "nil key": [{"a": [], "c": "1"}, {"a": None, "c": "1"}, {"c": "1"}, {"a": None}],
        "nil item": [None, {"a": "0", "c": "1"}, {"a": None}, {"c": "1"}],
        "nil item multiple keys": [None, {"b": "0", "c": "1"}, {"a": None}, {"c": "1"}],
        "multiple duplicates": [{"a": "x"}, {"a": "y"}, {"a": "x"}, {"a": "x"}, {"a": "y"}],
    }
    two = ("two keys", "undefined key", "nil item multiple keys")
    schema = obj(**{name: lst("map", ["a", "b"] if name in two else ["a"]) for name in value})
    assert listtype.causes(schema, value) == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "a": must be an object for an array of list-type map',
            "strings[0]",
        ),
        Cause(
            "FieldValueInvalid",
            'Invalid value: "a": must be an object for an array of list-type map',
            "not objects[0]",
        ),
        dup("one key[2]", '{"a":"1"}'),
        dup("two keys[2]", '{"a":"1","b":"2"}'),
        dup("undefined key[2]", '{"a":"1"}'),
        dup("compound key[4]", '{"a":["a",42]}'),
        dup("nil key[3]", '{"a":null}'),
        dup("nil item[3]", "{}"),
        dup("nil item multiple keys[3]", "{}"),
        dup("multiple duplicates[2]", '{"a":"x"}'),
        dup("multiple duplicates[4]", '{"a":"y"}'),
    ]


def test_an_update_is_checked_only_when_the_stored_object_passes() -> None:
    """strategy.go `ValidateUpdate` / status_strategy.go: ratcheting, so an object stored before
    its CRD gained the list type stays updatable; a create is always checked."""
    schema = obj(env=lst("map", ["name"], obj(name={"type": "string"})))
    bad = {"env": [{"name": "A"}, {"name": "A"}]}
    good = {"env": [{"name": "A"}]}
    expected = [dup("env[1]", '{"name":"A"}')]
    assert listtype.write_causes(schema, bad, None) == expected
    assert listtype.write_causes(schema, bad, good) == expected
    assert listtype.write_causes(schema, bad, bad) == []


def test_the_schema_validation_leaves_sets_to_the_list_type_check() -> None:
    """kube-openapi's validator has no list types; a set's duplicates are reported once, by
    `ValidateListSetsAndMaps`, not also by the schema (nor in a CRD's defaults)."""
    assert crschema.validate({"s": ["a", "a"]}, obj(s=lst("set", items={"type": "string"}))) == []


def crd_schema(name: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / name).read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_the_trainjob_crd_refuses_duplicate_keys_as_trainers_does() -> None:
    schema = crd_schema("trainer.kubeflow.org_trainjobs.yaml")
    env = [{"name": "LR", "value": "1"}, {"name": "LR", "value": "2"}]
    job = {
        "spec": {
            "trainer": {"env": env, "command": ["a", "a"]},  # command is atomic: repeats allowed
            "initializer": {"dataset": {"env": env}},
            "runtimePatches": [{"manager": "acme.io/a"}, {"manager": "acme.io/a"}],
        },
        "status": {
            "conditions": [{"type": "Complete"}, {"type": "Complete"}],
            "jobsStatus": [{"name": "node"}],
        },
    }
    assert listtype.causes(schema, job) == [
        dup("spec.trainer.env[1]", '{"name":"LR"}'),
        dup("spec.initializer.dataset.env[1]", '{"name":"LR"}'),
        dup("spec.runtimePatches[1]", '{"manager":"acme.io/a"}'),
        dup("status.conditions[1]", '{"type":"Complete"}'),
    ]
    # the keys are required, as upstream's (validateMapListKeysMapSet: required or defaulted)
    missing = crschema.validate({"spec": {"trainer": {"env": [{"value": "1"}]}}}, schema)
    assert Cause("FieldValueRequired", "Required value", "spec.trainer.env[0].name") in missing


def test_the_runtime_crds_refuse_duplicate_keys_as_trainers_do() -> None:
    for name in (
        "trainer.kubeflow.org_trainingruntimes.yaml",
        "trainer.kubeflow.org_clustertrainingruntimes.yaml",
    ):
        schema = crd_schema(name)
        runtime = {
            "spec": {
                "mlPolicy": {
                    "torch": {
                        "envInjection": {
                            "targets": [
                                {"jobName": "a", "containerNames": ["x", "x"]},
                                {"jobName": "a", "containerNames": ["y"]},
                            ]
                        }
                    }
                },
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {"name": "node", "dependsOn": [{"name": "init", "status": "Complete"}] * 2},
                            {"name": "node"},
                        ]
                    }
                },
            }
        }
        assert listtype.causes(schema, runtime) == [
            dup("spec.mlPolicy.torch.envInjection.targets[1]", '{"jobName":"a"}'),
            dup("spec.mlPolicy.torch.envInjection.targets[0].containerNames[1]", '"x"'),
            dup("spec.template.spec.replicatedJobs[1]", '{"name":"node"}'),
            dup("spec.template.spec.replicatedJobs[0].dependsOn[1]", '{"name":"init"}'),
        ], name
