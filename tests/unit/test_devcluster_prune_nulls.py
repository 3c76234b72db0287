"""devcluster drops a custom resource's `null` fields as apiextensions'
`PruneNonNullableNullsWithoutDefaults` does before defaulting: a field whose schema is neither
`nullable` nor defaulted loses its `null`; a nullable one keeps it; a defaulted one is left for
defaulting; list items and fields the schema does not describe are kept."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.kinds import schema

OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "env": {"type": "array", "items": OPEN},
        "note": {"type": "string", "nullable": True},
        "protocol": {"type": "string", "default": "TCP"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "open": OPEN,
    },
}


def test_a_null_the_schema_does_not_allow_is_dropped_and_the_rest_kept() -> None:
    obj: dict[str, Any] = {
        "env": None,
        "note": None,
        "protocol": None,
        "labels": {"a": None, "b": "x"},
        "items": [None, {"a": None}],
        "open": {"anything": None},
    }
    schema.prune_nulls(obj, SCHEMA)
    assert obj == {
        "note": None,  # nullable: kept
        "protocol": None,  # defaulted next (schema.apply_defaults)
        "labels": {"b": "x"},  # additionalProperties' schema applies to every key
        "items": [None, {}],  # a list item is never removed, only looked into
        "open": {"anything": None},  # not described: not the schema's to judge
    }
    assert schema.apply_defaults(obj, SCHEMA)["protocol"] == "TCP"
    assert schema.validate(obj, SCHEMA)[0].field == "items[0]"  # the item's null is still refused
