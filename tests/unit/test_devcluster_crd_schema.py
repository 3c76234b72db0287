"""devcluster refuses CRD schemas kube-apiserver refuses: non-structural schemas, metadata
restrictions, x-kubernetes-* extension rules, list types and map keys, defaults that do not
validate or would be pruned; paths and messages as apiextensions-apiserver words them. A schema
all versions share is reported under spec.validation (the internal type's top-level field), a
per-version one under spec.versions[i].schema."""

from __future__ import annotations

import copy

from crd_builders import causes, crd, root, two_versions

SPEC = "spec.validation.openAPIV3Schema.properties[spec]"


def test_type_is_required_for_specified_fields_items_and_the_root() -> None:
    assert causes(crd({"properties": {"n": {"type": "integer"}}})) == [
        (f"{SPEC}.type", "Required value: must not be empty for specified object fields")
    ]
    assert causes(crd({"type": "array", "items": {"description": "x"}})) == [
        (f"{SPEC}.items.type", "Required value: must not be empty for specified array items")
    ]
    assert causes(crd({"type": "array"})) == [(f"{SPEC}.items", "Required value: must be specified")]


def test_per_version_schemas_are_reported_per_version() -> None:
    bad = two_versions(crd())
    root(bad, 1)["properties"]["spec"] = {"properties": {}}
    assert causes(bad) == [
        (
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type",
            "Required value: must not be empty for specified object fields",
        )
    ]


def test_int_or_string_and_preserve_unknown_fields_need_no_type() -> None:
    quantity = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    free = {"x-kubernetes-preserve-unknown-fields": True}
    schema = {"type": "object", "properties": {"q": quantity, "free": free}}
    assert causes(crd(schema)) == []


def test_the_root_must_be_an_object_without_additional_properties() -> None:
    bad = crd()
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {"type": "array", "items": {"type": "string"}}
    assert causes(bad) == [
        ("spec.validation.openAPIV3Schema.type", 'Invalid value: "array": must be object at the root')
    ]
    free = crd()
    root(free)["additionalProperties"] = {"type": "string"}
    del root(free)["properties"]
    assert causes(free) == [
        ("spec.validation.openAPIV3Schema.additionalProperties", "Forbidden: must not be used at the root")
    ]


def test_properties_and_additional_properties_are_mutually_exclusive() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "string"},
    }
    assert causes(crd(schema)) == [
        (
            f"{SPEC}.additionalProperties",
            "Forbidden: additionalProperties and properties are mutual exclusive",
        )
    ]


def test_metadata_may_only_restrict_name_and_generate_name() -> None:
    bad = crd()
    root(bad)["properties"]["metadata"] = {"type": "object", "properties": {"labels": {"type": "object"}}}
    assert causes(bad) == [
        (
            "spec.validation.openAPIV3Schema.properties[metadata]",
            "Forbidden: must not specify anything other than name and generateName, but metadata is "
            "implicitly specified",
        )
    ]
    ok = crd()
    root(ok)["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 40}},
    }
    assert causes(ok) == []


def test_defaults_in_top_level_metadata_are_forbidden() -> None:
    bad = crd()
    root(bad)["properties"]["kind"] = {"type": "string", "default": "Widget"}
    assert causes(bad) == [
        (
            "spec.validation.openAPIV3Schema.properties[kind].default",
            "Forbidden: must not be set in top-level kind",
        )
    ]


def test_logical_junctors_hold_only_value_validations() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "anyOf": [{"type": "object"}, {"properties": {"b": {"minLength": 1}}}],
    }
    assert causes(crd(schema)) == [
        (f"{SPEC}.anyOf[0].type", "Forbidden: must be empty to be structural"),
    ]
    incomplete = crd()
    root(incomplete)["anyOf"] = [{"properties": {"missing": {"minLength": 1}}}]
    assert causes(incomplete) == [
        (
            "spec.validation.openAPIV3Schema.properties[missing]",
            "Required value: because it is defined in "
            "spec.validation.openAPIV3Schema.anyOf[0].properties[missing]",
        )
    ]


def test_unsupported_keywords_and_types() -> None:
    assert causes(crd({"type": "object", "uniqueItems": True})) == [
        (
            f"{SPEC}.uniqueItems",
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        )
    ]
    assert causes(crd({"type": "null"})) == [
        (
            f"{SPEC}.type",
            'Unsupported value: "null": supported values: '
            '"array", "boolean", "integer", "number", "object", "string"',
        ),
        (f"{SPEC}.type", "Forbidden: type cannot be set to null, use nullable as an alternative"),
    ]
    assert causes(crd({"type": "object", "x-kubernetes-preserve-unknown-fields": False})) == [
        (f"{SPEC}.x-kubernetes-preserve-unknown-fields", "Invalid value: false: must be true or undefined")
    ]
    assert causes(crd({"$ref": "#/definitions/x"})) == [(f"{SPEC}.$ref", "Forbidden: $ref is not supported")]


def test_nullable_cannot_be_true_at_the_root() -> None:
    bad = crd()
    root(bad)["nullable"] = True
    assert causes(bad) == [
        ("spec.validation.openAPIV3Schema.nullable", "Forbidden: nullable cannot be true at the root")
    ]


def test_embedded_resources_are_objects_with_properties() -> None:
    no_properties = (
        f"{SPEC}.properties",
        "Required value: must not be empty if x-kubernetes-embedded-resource is true without "
        "x-kubernetes-preserve-unknown-fields",
    )
    assert causes(crd({"type": "string", "x-kubernetes-embedded-resource": True})) == [
        no_properties,  # structural errors come sorted by their text, as upstream sorts them
        (f"{SPEC}.type", 'Invalid value: "string": must be object if x-kubernetes-embedded-resource is true'),
    ]
    assert causes(crd({"type": "object", "x-kubernetes-embedded-resource": True})) == [no_properties]
    template = {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"kind": {"type": "integer"}},
    }
    assert causes(crd(template)) == [
        (f"{SPEC}.properties[kind].type", 'Invalid value: "integer": must be string'),
    ]


def test_list_type_rules() -> None:
    no_keys = {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}
    assert causes(crd(no_keys)) == [
        (
            f"{SPEC}.x-kubernetes-list-map-keys",
            "Required value: must not be empty if x-kubernetes-list-type is map",
        )
    ]
    scalar_items = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "string"},
    }
    assert causes(crd(scalar_items)) == [
        (
            f"{SPEC}.items.type",
            'Invalid value: "string": must be object if parent array\'s x-kubernetes-list-type is map',
        )
    ]
    wrong = {"type": "object", "x-kubernetes-list-type": "bag"}
    assert causes(crd(wrong)) == [
        (f"{SPEC}.type", 'Invalid value: "object": must be array if x-kubernetes-list-type is specified'),
        (
            f"{SPEC}.x-kubernetes-list-type",
            'Unsupported value: "bag": supported values: "atomic", "set", "map"',
        ),
    ]
    keys_without_map = {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["a"]}
    assert causes(crd(keys_without_map)) == [
        (
            f"{SPEC}.x-kubernetes-list-type",
            "Required value: must be map if x-kubernetes-list-map-keys is non-empty",
        )
    ]


def test_map_keys_must_be_required_or_defaulted_scalars() -> None:
    ports = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["port", "protocol", "nope"],
        "items": {
            "type": "object",
            "required": ["port"],
            "properties": {"port": {"type": "integer"}, "protocol": {"type": "string", "nullable": True}},
        },
    }
    assert causes(crd(ports)) == [
        (
            f"{SPEC}.x-kubernetes-list-map-keys",
            'Invalid value: ["port","protocol","nope"]: entries must all be names of item properties',
        ),
        (
            f"{SPEC}.items.properties[protocol].default",
            "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default "
            "or be a required property",
        ),
        (
            f"{SPEC}.items.properties[protocol].nullable",
            "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
        ),
    ]
    fixed = copy.deepcopy(ports)
    fixed["x-kubernetes-list-map-keys"] = ["port", "protocol"]
    fixed["items"]["properties"]["protocol"] = {"type": "string", "default": "TCP"}
    assert causes(crd(fixed)) == []


def test_set_items_must_be_atomic() -> None:
    objects = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}
    assert causes(crd(objects)) == [
        (
            f"{SPEC}.items.x-kubernetes-map-type",
            "Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set",
        )
    ]
    objects["items"]["x-kubernetes-map-type"] = "atomic"
    assert causes(crd(objects)) == []


def test_defaults_must_validate_against_their_schema() -> None:
    schema = {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1, "default": 0}}}
    path = f"{SPEC}.properties[replicas].default"
    assert causes(crd(schema)) == [
        (path, f"Invalid value: 0: {path} in body should be greater than or equal to 1")
    ]


def test_defaults_must_not_be_pruned() -> None:
    schema = {
        "type": "object",
        "default": {"known": "a", "unknown": "b"},
        "properties": {"known": {"type": "string"}},
    }
    assert causes(crd(schema)) == [
        (
            f"{SPEC}.default",
            'Invalid value: {"known":"a","unknown":"b"}: must not have unknown fields',
        )
    ]
