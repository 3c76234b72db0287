"""Embedded resources' metadata decoded as ObjectMeta (apiextensions-apiserver objectmeta
`CoerceWithOptions`, `GetObjectMetaWithOptions`) and Go's RFC 3339 parsing of its timestamps."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.kinds.crds import coerce, gotime

EMBEDDED = {
    "type": "object",
    "x-kubernetes-embedded-resource": True,
    "x-kubernetes-preserve-unknown-fields": True,
}
F = "json: cannot unmarshal "
L = '"2006-01-02T15:04:05Z07:00"'
SCHEMA = {
    "type": "object",
    "properties": {
        "t": EMBEDDED,
        "l": {"type": "array", "items": EMBEDDED},
        "m": {"type": "object", "additionalProperties": EMBEDDED},
    },
}


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("x", 'parsing time "x" as ' + L + ': cannot parse "x" as "2006"'),
        (
            "2024-1-01T00:00:00Z",
            'parsing time "2024-1-01T00:00:00Z" as ' + L + ': cannot parse "1-01T00:00:00Z" as "01"',
        ),
        ("2024-13-01T00:00:00Z", 'parsing time "2024-13-01T00:00:00Z": month out of range'),
        ("2024-02-30T00:00:00Z", 'parsing time "2024-02-30T00:00:00Z": day out of range'),
        ("2024-01-01T24:00:00Z", 'parsing time "2024-01-01T24:00:00Z": hour out of range'),
        (
            "2024-01-01 00:00:00Z",
            'parsing time "2024-01-01 00:00:00Z" as ' + L + ': cannot parse " 00:00:00Z" as "T"',
        ),
        (
            "2024-01-01T00:00:00",
            'parsing time "2024-01-01T00:00:00" as ' + L + ': cannot parse "" as "Z07:00"',
        ),
        ("2024-01-01T00:00:00Zx", 'parsing time "2024-01-01T00:00:00Zx": extra text: "x"'),
        (
            "2024-01-01T00:00:00+25:00",
            'parsing time "2024-01-01T00:00:00+25:00": time zone offset hour out of range',
        ),
        ("é", 'parsing time "\\xc3\\xa9" as ' + L + ': cannot parse "\\xc3\\xa9" as "2006"'),
    ],
)
def test_rfc3339_errors_are_go_time_parse_errors(value: str, error: str) -> None:
    with pytest.raises(gotime.GoTimeError) as raised:
        gotime.parse_rfc3339(value)
    assert str(raised.value) == error


def test_rfc3339_accepts_what_go_accepts_and_converts_to_utc() -> None:
    assert gotime.parse_rfc3339("2024-02-29T23:30:00-01:00") == (2024, 3, 1, 0, 30, 0)
    assert gotime.parse_rfc3339("2024-01-01T9:05:06.123456789Z") == (2024, 1, 1, 9, 5, 6)
    assert gotime.format_rfc3339((2024, 3, 1, 0, 30, 0)) == "2024-03-01T00:30:00Z"


def test_object_meta_drops_unknown_fields_and_writes_back_what_go_would() -> None:
    meta = {
        "name": "a",
        "zz": 1,
        "labels": {"k": None},
        "annotations": {},
        "generation": 0,
        "deletionGracePeriodSeconds": 0,
        "creationTimestamp": None,
        "ownerReferences": [None, {"kind": "K", "x": {"y": 1}, "controller": False}],
        "finalizers": [None],
    }
    out, unknown = coerce.object_meta(meta, "spec.t.metadata")
    assert unknown == ["spec.t.metadata.ownerReferences[1].x", "spec.t.metadata.zz"]
    assert out == {
        "name": "a",
        "deletionGracePeriodSeconds": 0,
        "labels": {"k": ""},
        "ownerReferences": [
            {"apiVersion": "", "kind": "", "name": "", "uid": ""},
            {"apiVersion": "", "kind": "K", "name": "", "uid": "", "controller": False},
        ],
        "finalizers": [""],
    }
    assert coerce.object_meta(None, "m") == ({}, [])
    assert coerce.object_meta({"generation": 2.0}, "m") == ({"generation": 2}, [])


@pytest.mark.parametrize(
    ("meta", "error"),
    [
        ("x", F + "string into Go value of type v1.ObjectMeta"),
        ({"labels": "x"}, F + "string into Go struct field ObjectMeta.labels of type map[string]string"),
        ({"labels": {"a": 1}}, F + "number into Go struct field ObjectMeta.labels of type string"),
        ({"generation": 1.5}, F + "number 1.5 into Go struct field ObjectMeta.generation of type int64"),
        (
            {"generation": 2**63},
            F + "number 9223372036854775808 into Go struct field ObjectMeta.generation of type int64",
        ),
        ({"finalizers": "f"}, F + "string into Go struct field ObjectMeta.finalizers of type []string"),
        (
            {"ownerReferences": [{"controller": "yes"}]},
            F + "string into Go struct field OwnerReference.ownerReferences.controller of type bool",
        ),
        (
            {"ownerReferences": [1]},
            F + "number into Go struct field ObjectMeta.ownerReferences of type v1.OwnerReference",
        ),
        (
            {"managedFields": {}},
            F + "object into Go struct field ObjectMeta.managedFields of type []v1.ManagedFieldsEntry",
        ),
        # a saved type error comes first in key order, unless a timestamp's error stops the decoder
        (
            {"annotations": 1, "labels": 2},
            F + "number into Go struct field ObjectMeta.annotations of type map[string]string",
        ),
        ({"annotations": 1, "creationTimestamp": 5}, F + "number into Go value of type string"),
    ],
)
def test_a_wrongly_typed_metadata_field_is_the_decoders_first_error(meta: Any, error: str) -> None:
    with pytest.raises(coerce.MetaError) as raised:
        coerce.object_meta(meta, "m")
    assert str(raised.value) == error


def test_coerce_reports_each_embedded_resource_s_fields_sorted_with_its_path() -> None:
    obj = {
        "t": {"kind": "K", "metadata": {"zz": 1, "name": "n"}},
        "l": [{"metadata": {"b": {"c": 1}}}],
        "m": {"k1": {"metadata": {"q": 1}}},
        "other": {"metadata": {"kept": 1}},
    }
    assert coerce.coerce_error(obj, SCHEMA) is None
    assert coerce.coerce(obj, SCHEMA) == ["l[0].metadata.b", "m[k1].metadata.q", "t.metadata.zz"]
    assert obj["t"] == {"kind": "K", "metadata": {"name": "n"}}
    assert obj["other"] == {"metadata": {"kept": 1}}  # not an embedded resource


def test_coerce_errors_name_the_field_and_show_the_value_as_go_marshals_it() -> None:
    assert coerce.coerce_error({"t": {"kind": 1}}, SCHEMA) == "t.kind: Invalid value: 1: must be a string"
    assert coerce.coerce_error({"l": [{"apiVersion": ["v1"]}]}, SCHEMA) == (
        'l[0].apiVersion: Invalid value: ["v1"]: must be a string'
    )
    meta = {"labels": [], "name": "<n>", "generation": 1.0}
    assert coerce.coerce_error({"m": {"k": {"metadata": meta}}}, SCHEMA) == (
        'm[k].metadata: Invalid value: {"generation":1,"labels":[],"name":"\\u003cn\\u003e"}: '
        + F
        + "array into Go struct field ObjectMeta.labels of type map[string]string"
    )
    assert coerce.go_json([1e-7, 2.5, 1e21, 0.00001]) == "[1e-7,2.5,1e+21,0.00001]"
