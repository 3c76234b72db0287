"""How devcluster decodes request bodies (devcluster/apiserver/request/decoding.py, requestparse.py): the
value of a strategic merge patch's strict error, the patch as Go's `fmt.Sprintf("%+v",
patchMap)` prints it (patch.go `applyPatchToObject`); a JSON patch's unknown and duplicate
fields (patch.go `jsonPatcher.applyJSPatch`); review and TokenRequest bodies decoded as their
kinds; a YAML body's key order."""

from __future__ import annotations

import json

import pytest

from kubetrain.devcluster.apiserver.auth.accessreviews import (
    SUBJECT_ACCESS_REVIEWS_KEY,
    TOKEN_REVIEWS_KEY,
    body_kind,
)
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.endpoints.requestparse import decode_body
from kubetrain.devcluster.apiserver.kinds.resources import Registry
from kubetrain.devcluster.apiserver.request.decoding import (
    check_json_patch,
    go_format,
    json_patch_decode_error,
    json_patch_errors,
    unknown_fields,
)
from kubetrain.devcluster.apiserver.request.duplicates import find
from kubetrain.devcluster.apiserver.request.patch import (
    EMPTY,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC,
    apply_patch,
)
from kubetrain.devcluster.apiserver.request.target import Target


def test_maps_print_with_sorted_keys_and_lists_with_spaces() -> None:
    patch = {"spec": {"z": None, "a": [1, "x", True]}, "data": {"k": "v w"}, "metadata": {}}
    assert go_format(patch) == "map[data:map[k:v w] metadata:map[] spec:map[a:[1 x true] z:<nil>]]"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5, "1.5"),
        (2.0, "2"),
        (100000.0, "100000"),
        (1234567.0, "1.234567e+06"),
        (1e21, "1e+21"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3.25e-7, "-3.25e-07"),
        (0.0, "0"),
    ],
)
def test_floats_print_as_strconv_format_float_g(value: float, text: str) -> None:
    """strconv.FormatFloat(f, 'g', -1, 64): shortest digits, exponent form below 1e-4 or from 1e6."""
    assert go_format(value) == text


def _patch_errors(raw: str) -> list[str]:
    """The strict errors of a JSON patch sent as the text `raw`, as the handler finds them."""
    return json_patch_errors(json.loads(raw), find(raw))


def test_json_patch_keys_an_operation_lacks_are_unknown_fields() -> None:
    raw = '[{"op": "remove", "path": "/a"}, {"op": "add", "path": "/b", "value": 1, "fromm": "/a"}]'
    assert _patch_errors(raw) == ['json patch unknown field "[1].fromm"']
    assert _patch_errors('[{"op": "add", "path": "/b", "from": "/a", "value": 1}]') == []


def test_json_patch_keys_match_case_sensitively_and_unknown_ones_are_reported_once() -> None:
    """sigs.k8s.io/json UnmarshalStrict is case-sensitive; an unknown key's value is skipped
    unread (no duplicate inside it) and a repeated unknown key is one error (saveStrictError)."""
    raw = '[{"op": "add", "Value": 1, "foo": {"x": 1, "x": 2}, "path": "/a", "foo": 3, "value": 1}]'
    assert _patch_errors(raw) == [
        'json patch unknown field "[0].Value"',
        'json patch unknown field "[0].foo"',
    ]


def test_json_patch_unknown_and_duplicate_fields_come_in_document_order() -> None:
    raw = '[{"op": "add", "value": {"a": 1, "a": 2}, "bogus": 1, "path": "/x", "path": "/y"}]'
    assert _patch_errors(raw) == [
        'json patch duplicate field "[0].value.a"',
        'json patch unknown field "[0].bogus"',
        'json patch duplicate field "[0].path"',
    ]


def test_json_patch_errors_stop_at_one_hundred() -> None:
    ops = [{"op": "test", "path": "/a", "value": 1, f"k{i}": i} for i in range(150)]
    found = json_patch_errors(ops, None)
    assert len(found) == 100 and found[-1] == 'json patch unknown field "[99].k99"'


def test_a_json_patch_that_is_not_a_list_of_objects_has_no_field_errors() -> None:
    assert json_patch_errors({"op": "add", "foo": 1}, None) == []
    assert json_patch_errors(["op", 3, None], None) == []


_AS_OPS = "into Go value of type []handlers.jsonPatchOp"
_AS_OP = "into Go value of type handlers.jsonPatchOp"


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ('{"op": "add"}', f"json: cannot unmarshal object {_AS_OPS}"),
        ('"add"', f"json: cannot unmarshal string {_AS_OPS}"),
        ("7", f"json: cannot unmarshal number {_AS_OPS}"),
        ('[{"op": "remove", "path": "/a"}, 3]', f"json: cannot unmarshal number {_AS_OP}"),
        ('["op"]', f"json: cannot unmarshal string {_AS_OP}"),
        ("[true]", f"json: cannot unmarshal bool {_AS_OP}"),
        ("[[]]", f"json: cannot unmarshal array {_AS_OP}"),
        (
            '[{"op": 1, "path": "/a"}]',
            "json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string",
        ),
        (
            '[{"op": "add", "path": ["a"], "value": 1}]',
            "json: cannot unmarshal array into Go struct field jsonPatchOp.path of type string",
        ),
        (
            '[{"op": "move", "from": {"a": 1}, "path": false}]',
            "json: cannot unmarshal object into Go struct field jsonPatchOp.from of type string",
        ),
        (  # the first in document order, across operations
            '[{"op": "add", "path": true}, 5]',
            "json: cannot unmarshal bool into Go struct field jsonPatchOp.path of type string",
        ),
    ],
)
def test_a_json_patch_that_is_not_a_list_of_operations_names_the_go_type(raw: str, error: str) -> None:
    assert json_patch_decode_error(json.loads(raw)) == error


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ('[{"op": 1, "op": "add", "path": "/a"}]', "number into Go struct field jsonPatchOp.op"),
        (
            '[{"path": "/a", "op": 5, "path": true, "op": "add"}]',
            "number into Go struct field jsonPatchOp.op",
        ),
        ('[{"op": "add", "path": null, "path": [1]}]', "array into Go struct field jsonPatchOp.path"),
        ('[{"op": "add", "path": "/a"}, {"op": "add", "from": {}, "from": "/b"}]', "object into Go struct"),
    ],
)
def test_every_value_of_a_key_repeated_in_an_operation_is_decoded(raw: str, error: str) -> None:
    """Go decodes each value of a repeated key (the first type error stands), Python keeps the
    last: the duplicates' pairs give the values in document order."""
    found = json_patch_decode_error(json.loads(raw), find(raw))
    assert found is not None and found.startswith(f"json: cannot unmarshal {error}")


def test_null_keys_other_cased_keys_and_any_value_decode() -> None:
    """`null` decodes as nothing; `Op` is not `op` (case-sensitive: an unknown field instead)."""
    for raw in ["null", "[null]", '[{"op": null, "path": null}]', '[{"Op": 1, "value": {"a": [1]}}]']:
        assert json_patch_decode_error(json.loads(raw)) is None


def test_the_decoding_error_is_a_bad_request_under_strict_and_warn_only() -> None:
    bad = [{"op": "add", "path": 1}]
    for validation in ("Strict", "Warn"):
        with pytest.raises(ApiError) as err:
            check_json_patch(_target("configmaps", validation=validation), "application/json-patch+json", bad)
        assert err.value.code == 400 and err.value.reason == "BadRequest"
        assert err.value.message == (
            "error decoding patch: json: cannot unmarshal number into Go struct field "
            "jsonPatchOp.path of type string"
        )
    check_json_patch(_target("configmaps", validation="Ignore"), "application/json-patch+json", bad)
    check_json_patch(_target("configmaps", validation="Strict"), "application/merge-patch+json", bad)


def test_a_null_patch_leaves_the_object_alone_except_as_a_merge_patch() -> None:
    current = {"metadata": {"name": "a"}, "data": {"k": "v"}}
    for ctype in (JSON_PATCH, STRATEGIC):
        assert apply_patch(ctype, current, None, custom=False) == current
    with pytest.raises(ApiError) as err:
        apply_patch(MERGE_PATCH, current, None, custom=False)
    assert (err.value.code, err.value.message) == (400, "Invalid JSON Patch")
    assert apply_patch(MERGE_PATCH, current, {"data": None}, custom=False) == {"metadata": {"name": "a"}}


@pytest.mark.parametrize(
    ("ctype", "validation", "message"),
    [
        (STRATEGIC, "Strict", "unexpected end of JSON input"),
        (STRATEGIC, "Ignore", "unexpected end of JSON input"),
        (JSON_PATCH, "Warn", "error decoding patch: unexpected end of JSON input"),
        (JSON_PATCH, "Ignore", "unexpected end of JSON input"),
        (MERGE_PATCH, "Strict", "error decoding patch: unexpected end of JSON input"),
        (MERGE_PATCH, "Ignore", "Invalid JSON Patch"),
    ],
)
def test_an_empty_patch_body_is_a_bad_request(ctype: str, validation: str, message: str) -> None:
    with pytest.raises(ApiError) as err:
        check_json_patch(_target("configmaps", validation=validation), ctype, EMPTY)
    assert (err.value.code, err.value.reason, err.value.message) == (400, "BadRequest", message)


def _target(key: str, subresource: str = "", validation: str = "Warn") -> Target:
    rt = Registry().by_key(key)
    assert rt is not None
    return Target(rt, "v1", "ns", "fv", subresource, field_validation=validation)


def test_reviews_and_token_requests_decode_their_bodies_as_their_kinds() -> None:
    """create.go `createHandler`: a review's body is decoded as its own kind, a
    serviceaccounts/token body as a TokenRequest; unknown fields are dropped and reported."""
    sar = _target(SUBJECT_ACCESS_REVIEWS_KEY)
    kind = body_kind(sar)
    assert kind == ("authorization.k8s.io", "v1", "SubjectAccessReview")
    body = {"spec": {"user": "u", "resourceAttributes": {"verb": "get", "verbb": "delete"}}}
    assert unknown_fields(sar, body, kind=kind) == ['unknown field "spec.resourceAttributes.verbb"']
    assert body == {"spec": {"user": "u", "resourceAttributes": {"verb": "get"}}}

    token = _target("serviceaccounts", "token", "Strict")
    assert body_kind(token) == ("authentication.k8s.io", "v1", "TokenRequest")
    with pytest.raises(ApiError) as refused:
        unknown_fields(token, {"spec": {"expirationSecond": 600}}, kind=body_kind(token))
    assert refused.value.code == 400 and refused.value.message == (
        'TokenRequest in version "v1" cannot be handled as a TokenRequest: strict decoding error: '
        'unknown field "spec.expirationSecond"'
    )
    assert body_kind(_target(TOKEN_REVIEWS_KEY)) == ("authentication.k8s.io", "v1", "TokenReview")
    assert body_kind(_target("serviceaccounts")) is None and body_kind(_target("pods")) is None


def test_a_yaml_body_is_decoded_with_its_keys_sorted_as_yaml_to_json_leaves_them() -> None:
    """sigs.k8s.io/yaml `YAMLToJSON` marshals the YAML's maps as JSON, keys sorted at every
    level (inside lists too); JSON text sent as YAML goes through it as well, JSON as JSON not."""
    body = decode_body(b"zz: 1\nb:\n  - {y: 1, x: 2}\na: {d: 1, c: 2}\n", "application/yaml")
    assert list(body) == ["a", "b", "zz"] and list(body["a"]) == ["c", "d"]
    assert list(body["b"][0]) == ["x", "y"]
    as_yaml = decode_body(b'{"z": 1, "a": 2}', "application/yaml")
    assert list(as_yaml) == ["a", "z"]
    assert list(decode_body(b'{"z": 1, "a": 2}', "application/json")) == ["z", "a"]
