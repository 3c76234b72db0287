"""Duplicate fields in a request body under each fieldValidation directive.

Like test_conformance_fields.py this runs against devcluster in the normal test run and against
$KUBECONFIG's cluster with `pytest -m e2e`. The bodies are real JSON text with a repeated key
(`Dup` encodes its pairs as given). kube-apiserver's strict decoder (sigs.k8s.io/json
`DisallowDuplicateFields`) reports `duplicate field "<path>"` per fieldValidation exactly as an
unknown field: Strict refuses (400 for create and update, 422 for a patch), Warn keeps the last
value with a Warning, Ignore keeps the last value silently.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e.conformance_support import MERGE, assert_status, cm, cms, gadget, gadgets, install_crd

STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRICT = {"fieldValidation": "Strict"}


async def send(kube: Any, method: str, path: str, body: Any, **kw: Any) -> Any:
    return await kube.raw(method, path, json.dumps(body).encode(), **kw)


class Dup(dict[str, Any]):
    """An object that json.dumps writes with its pairs as given, repeats included (sent with
    `kube.raw`: the client would re-encode it as a dict)."""

    def __init__(self, *pairs: tuple[str, Any]) -> None:
        super().__init__(pairs)
        self.pairs = list(pairs)

    def items(self) -> Any:
        return self.pairs


def dup_cm(name: str) -> Dup:
    return Dup(
        ("apiVersion", "v1"),
        ("kind", "ConfigMap"),
        ("metadata", Dup(("name", name), ("labels", Dup(("a", "1"), ("a", "2"))))),
        ("data", {"k": "first"}),
        ("bogus", 1),
        ("data", {"k": "last"}),
    )


async def test_strict_refuses_duplicates_with_unknown_fields_in_document_order(
    kube: Any, namespace: str
) -> None:
    """create.go / rest.go `transformDecodeError`: one 400 listing every strict error; a built-in
    object is decoded in one pass, so duplicates and unknown fields come in document order."""
    refused = await send(kube, "POST", cms(namespace), dup_cm("s"), query=STRICT)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "metadata.labels.a", unknown field "bogus", duplicate field "data"'
    )
    assert (await kube.request("GET", f"{cms(namespace)}/s")).status == 404


@pytest.mark.parametrize("query", [{"fieldValidation": "Warn"}, {}], ids=["Warn", "absent"])
async def test_warn_keeps_the_last_value_with_a_warning(
    kube: Any, namespace: str, query: dict[str, str]
) -> None:
    made = await send(kube, "POST", cms(namespace), dup_cm("w"), query=query)
    assert made.status == 201, made
    assert made.warnings == [
        'duplicate field "metadata.labels.a"',
        'unknown field "bogus"',
        'duplicate field "data"',
    ]
    assert made.body["data"] == {"k": "last"} and made.body["metadata"]["labels"] == {"a": "2"}

    # update (PUT) is decoded the same way
    body = Dup(*made.body.items(), ("data", {"k": "again"}))
    updated = await send(kube, "PUT", f"{cms(namespace)}/w", body, query=query)
    assert updated.status == 200 and updated.warnings == ['duplicate field "data"']
    assert updated.body["data"] == {"k": "again"}


async def test_ignore_keeps_the_last_value_silently(kube: Any, namespace: str) -> None:
    made = await send(kube, "POST", cms(namespace), dup_cm("i"), query={"fieldValidation": "Ignore"})
    assert made.status == 201 and not made.warnings
    assert made.body["data"] == {"k": "last"}


async def test_patches_report_the_duplicates_of_the_patch_first(kube: Any, namespace: str) -> None:
    """patch.go `applyJSPatch` / `patchResource`: the patch body is decoded strictly before the
    patched object, its duplicates first; a JSON patch's are prefixed `json patch `. Strict is
    422 Invalid on the field `patch`."""
    path = f"{cms(namespace)}/pt"
    await kube.ok("POST", cms(namespace), cm("pt", a="1"))
    merge = Dup(("data", {"b": "1"}), ("bogus", 1), ("data", {"b": "2"}))
    json_patch = [Dup(("op", "add"), ("path", "/data/b"), ("value", "1"), ("value", "2"))]
    for content_type, body, detail in [
        (MERGE, merge, 'duplicate field "data", unknown field "bogus"'),
        (STRATEGIC, merge, 'duplicate field "data", unknown field "bogus"'),
        (JSON_PATCH, json_patch, 'json patch duplicate field "[0].value"'),
    ]:
        refused = await send(kube, "PATCH", path, body, content_type=content_type, query=STRICT)
        assert_status(refused.body, 422, "Invalid")
        [cause] = refused.body["details"]["causes"]
        assert cause["field"] == "patch" and cause["message"].endswith(f": strict decoding error: {detail}")
        assert (await kube.ok("GET", path))["data"] == {"a": "1"}

        warned = await send(kube, "PATCH", path, body, content_type=content_type)
        assert warned.status == 200, warned
        assert warned.warnings == detail.split(", ")
        assert warned.body["data"]["b"] == "2"  # the last value
        await kube.ok("PUT", path, {**cm("pt", a="1"), "metadata": warned.body["metadata"]})


async def test_a_json_patch_key_repeated_in_an_operation_is_type_checked_at_each_value(
    kube: Any, namespace: str
) -> None:
    """sigs.k8s.io/json decodes every value of a repeated key into the `jsonPatchOp` field and
    keeps the first `UnmarshalTypeError` (decode.go `saveError`), so under Strict and Warn a
    wrong-typed value the last one replaces still refuses the patch (400 `error decoding
    patch: `), and the first wrong value in document order is the one named."""
    path = f"{cms(namespace)}/rk"
    await kube.ok("POST", cms(namespace), cm("rk", a="1"))
    field = "json: cannot unmarshal {} into Go struct field jsonPatchOp.{} of type string"
    for body, error in [
        ([Dup(("op", 1), ("op", "add"), ("path", "/data/b"), ("value", "2"))], field.format("number", "op")),
        (
            [Dup(("path", "/data/b"), ("op", {}), ("path", True), ("op", "add"), ("value", "2"))],
            field.format("object", "op"),
        ),
    ]:
        for query in (STRICT, None):
            refused = await send(kube, "PATCH", path, body, content_type=JSON_PATCH, query=query)
            assert_status(refused.body, 400, "BadRequest")
            assert refused.body["message"] == f"error decoding patch: {error}"
    assert (await kube.ok("GET", path))["data"] == {"a": "1"}
    # under Ignore only evanphx/json-patch decodes it (`Operation` is a map: the last value wins)
    body = [Dup(("op", 1), ("op", "add"), ("path", "/data/b"), ("value", "2"))]
    ignored = await send(
        kube, "PATCH", path, body, content_type=JSON_PATCH, query={"fieldValidation": "Ignore"}
    )
    assert ignored.status == 200 and ignored.body["data"] == {"a": "1", "b": "2"}


async def test_a_key_repeated_inside_a_value_go_decodes_itself_is_not_reported(
    kube: Any, namespace: str
) -> None:
    """sigs.k8s.io/json hands a value whose Go type has its own UnmarshalJSON (here a
    managedFields entry's FieldsV1, which keeps the raw bytes) over whole, without looking for
    duplicates inside it; a repeated key elsewhere in the body is still reported."""
    entry = {
        "manager": "m",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": Dup(("f:data", {"f:a": {}}), ("f:data", {"f:a": {}})),
    }
    meta = {"name": "raw", "managedFields": [entry]}
    body = Dup(
        ("apiVersion", "v1"), ("kind", "ConfigMap"), ("metadata", meta), ("data", {}), ("data", {"a": "1"})
    )
    refused = await send(kube, "POST", cms(namespace), body, query=STRICT)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"].endswith('strict decoding error: duplicate field "data"')
    made = await send(kube, "POST", cms(namespace), body)
    assert made.status == 201, made
    assert made.warnings == ['duplicate field "data"']


async def test_custom_resources_report_duplicates_before_pruned_fields(kube: Any, namespace: str) -> None:
    """customresource_handler.go `schemaCoercingDecoder.Decode`: the JSON decoder's duplicates,
    then the fields pruning drops."""
    await install_crd(kube)
    body = Dup(*gadget("g").items(), ("bogus", 1), ("metadata", {"name": "g"}))
    refused = await send(kube, "POST", gadgets(namespace), body, query=STRICT)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"].endswith(
        'strict decoding error: duplicate field "metadata", unknown field "bogus"'
    )
    made = await send(kube, "POST", gadgets(namespace), body)
    assert made.status == 201, made
    assert made.warnings == ['duplicate field "metadata"', 'unknown field "bogus"']


async def test_a_custom_resource_s_unknown_metadata_fields_come_before_pruned_ones(
    kube: Any, namespace: str
) -> None:
    """customresource_handler.go `unstructuredSchemaCoercer.apply`: the metadata is decoded
    strictly into ObjectMeta after a JSON round trip (objectmeta/coerce.go
    `GetObjectMetaWithOptions`, keys sorted), so its unknown fields are reported, sorted, after
    the body's duplicates and before the pruned fields, and dropped from what is stored."""
    await install_crd(kube)
    meta = Dup(("name", "m"), ("zeta", 1), ("labels", {"a": "1"}), ("alpha", {"x": 1}), ("name", "m"))
    body = Dup(*gadget("m").items(), ("bogus", 1), ("metadata", meta))
    detail = (
        'duplicate field "metadata", duplicate field "metadata.name", unknown field "metadata.alpha", '
        'unknown field "metadata.zeta", unknown field "bogus"'
    )
    refused = await send(kube, "POST", gadgets(namespace), body, query=STRICT)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"].endswith(f"strict decoding error: {detail}")
    made = await send(kube, "POST", gadgets(namespace), body)
    assert made.status == 201, made
    assert made.warnings == detail.split(", ")
    stored = await kube.ok("GET", f"{gadgets(namespace)}/m")
    assert "alpha" not in stored["metadata"] and "zeta" not in stored["metadata"]
    assert stored["metadata"]["labels"] == {"a": "1"}


YAML_CM = b"""apiVersion: v1
kind: ConfigMap
metadata:
  name: y
  labels:
    a: "1"
    a: "2"
data:
  k: first
bogus: 1
data:
  k: last
"""


async def test_a_yaml_body_reports_go_yaml_errors_first(kube: Any, namespace: str) -> None:
    """json.go `Serializer.unmarshal`: YAMLToJSONStrict's error (go-yaml's `line <L>: key "a"
    already set in map`, L the line of the repeated key's value) before the JSON's strict
    errors; under Warn one warning per line (rest.go `parseYAMLWarnings`)."""
    yaml_type = "application/yaml"
    refused = await kube.raw("POST", cms(namespace), YAML_CM, content_type=yaml_type, query=STRICT)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'yaml: unmarshal errors:\n  line 7: key "a" already set in map\n'
        '  line 12: key "data" already set in map, unknown field "bogus"'
    )
    made = await kube.raw("POST", cms(namespace), YAML_CM, content_type=yaml_type)
    assert made.status == 201, made
    assert made.warnings == [
        'line 7: key "a" already set in map',
        'line 12: key "data" already set in map',
        'unknown field "bogus"',
    ]
    assert made.body["data"] == {"k": "last"} and made.body["metadata"]["labels"] == {"a": "2"}


async def test_a_repeated_float_key_in_yaml_is_printed_as_go_prints_it(kube: Any, namespace: str) -> None:
    """go-yaml v2 decodes `1000000.0` as a float64 and its `key %#v already set in map` prints
    it as Go's `%v` does (strconv 'g', shortest): `1e+06`, `1.234567895e+08`, `0.5`."""
    body = b"""apiVersion: v1
kind: ConfigMap
metadata:
  name: yf
bogus:
  1000000.0: a
  1000000.0: b
  123456789.5: c
  123456789.5: d
  0.5: e
  0.5: f
"""
    refused = await kube.raw("POST", cms(namespace), body, content_type="application/yaml", query=STRICT)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        "yaml: unmarshal errors:\n  line 7: key 1e+06 already set in map\n"
        "  line 9: key 1.234567895e+08 already set in map\n"
        '  line 11: key 0.5 already set in map, unknown field "bogus"'
    )
