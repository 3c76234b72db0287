"""Unknown fields of built-in kinds under each fieldValidation directive: what an operator that
misspells a Pod field sees, and what is stored.

Like test_conformance.py (fixtures in conftest.py, helpers in conformance_support.py) this runs
against devcluster in the normal test run and against $KUBECONFIG's cluster with `pytest -m e2e`.
kube-apiserver decodes a built-in object into its Go type, so a field the type does not have is
never stored; k8s.io/apiserver pkg/endpoints/handlers (create.go, update.go, patch.go, rest.go
`transformDecodeError`, `addStrictDecodingWarnings`) report it per fieldValidation: Strict
refuses, Warn (the default since 1.27, also when the parameter is absent) answers with a
`Warning: 299 - "unknown field \\"<path>\\""` header, Ignore says nothing. Paths are
sigs.k8s.io/json's (`decodeState.newFieldError`): keys joined by `.`, list indices as `[i]`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e.conformance_support import MERGE, assert_status, cm, cms, gadget, gadgets, install_crd

STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def pods(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/pods"


def pod(name: str, **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "busybox:1.36", **container}],
            "schedulerName": "kubetrain-no-such-scheduler",  # stays unscheduled on real clusters
        },
    }


def misspelled_pod(name: str) -> dict[str, Any]:
    body = pod(name, imagePullPolicyy="Always")
    body["metadata"]["labelz"] = {"a": "b"}
    return body


MISSPELLED = ['unknown field "metadata.labelz"', 'unknown field "spec.containers[0].imagePullPolicyy"']


async def test_strict_refuses_an_unknown_field_of_a_configmap_and_a_pod(kube: Any, namespace: str) -> None:
    """create.go: a strict decoding error is 400 BadRequest `<Kind> in version "v1" cannot be
    handled as a <Kind>: strict decoding error: ...`, every unknown field in document order;
    nothing is created (what `kubectl apply`, which sends Strict, shows for a typo)."""
    strict = {"fieldValidation": "Strict"}
    refused = await kube.request("POST", cms(namespace), {**cm("s", a="1"), "spec": {"x": 1}}, query=strict)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "spec"'
    )
    assert (await kube.request("GET", f"{cms(namespace)}/s")).status == 404

    refused = await kube.request("POST", pods(namespace), misspelled_pod("p"), query=strict)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: ' + ", ".join(MISSPELLED)
    )
    assert (await kube.request("GET", f"{pods(namespace)}/p")).status == 404

    # A body of known fields only is created under Strict; map keys are data, not fields.
    made = await kube.request("POST", cms(namespace), cm("s", labels={"spec": "x"}, spec="1"), query=strict)
    assert made.status == 201 and made.body["data"] == {"spec": "1"} and not made.warnings


@pytest.mark.parametrize("query", [{"fieldValidation": "Warn"}, {}], ids=["Warn", "absent"])
async def test_warn_drops_an_unknown_field_with_a_warning(
    kube: Any, namespace: str, query: dict[str, str]
) -> None:
    """Warn (and no parameter): created without the field, one Warning per unknown field."""
    made = await kube.request("POST", pods(namespace), misspelled_pod("p"), query=query)
    assert made.status == 201, made
    assert made.warnings == MISSPELLED
    assert "labelz" not in made.body["metadata"]
    assert "imagePullPolicyy" not in made.body["spec"]["containers"][0]
    stored = await kube.ok("GET", f"{pods(namespace)}/p")
    assert "labelz" not in stored["metadata"]
    assert stored["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"  # the default, not ours

    created = await kube.request("POST", cms(namespace), {**cm("w", a="1"), "bogus": True}, query=query)
    assert created.status == 201 and created.warnings == ['unknown field "bogus"']
    assert "bogus" not in await kube.ok("GET", f"{cms(namespace)}/w")

    # update (PUT) decodes its body the same way
    updated = await kube.request(
        "PUT", f"{cms(namespace)}/w", {**created.body, "data": {"a": "2"}, "bogus": 1}, query=query
    )
    assert updated.status == 200 and updated.warnings == ['unknown field "bogus"']
    assert updated.body["data"] == {"a": "2"} and "bogus" not in updated.body


async def test_ignore_drops_an_unknown_field_silently(kube: Any, namespace: str) -> None:
    ignore = {"fieldValidation": "Ignore"}
    made = await kube.request("POST", pods(namespace), misspelled_pod("p"), query=ignore)
    assert made.status == 201 and not made.warnings
    stored = await kube.ok("GET", f"{pods(namespace)}/p")
    assert "labelz" not in stored["metadata"]
    assert "imagePullPolicyy" not in stored["spec"]["containers"][0]

    created = await kube.request("POST", cms(namespace), {**cm("i", a="1"), "bogus": 1}, query=ignore)
    assert created.status == 201 and not created.warnings and "bogus" not in created.body


async def test_patches_report_the_unknown_fields_of_the_patched_object(kube: Any, namespace: str) -> None:
    """patch.go: the unknown fields are those of the patched object. Strict is 422 Invalid with
    an empty kind and name and one cause on the field `patch` (`applyPatchToCurrentObject` for
    JSON and merge patches, `applyPatchToObject` for strategic merge patches, whose value is the
    patch printed as Go's `%+v` of a map); Warn patches without the field, with a Warning."""
    path = f"{cms(namespace)}/pt"
    await kube.ok("POST", cms(namespace), cm("pt", a="1"))
    detail = 'strict decoding error: unknown field "bogus"'

    for content_type, body in [
        (MERGE, {"bogus": 1, "data": {"b": "2"}}),
        (JSON_PATCH, [{"op": "add", "path": "/bogus", "value": 1}]),
        (STRATEGIC, {"bogus": 1, "data": {"b": "2"}}),
    ]:
        refused = await kube.request(
            "PATCH", path, body, content_type=content_type, query={"fieldValidation": "Strict"}
        )
        assert_status(refused.body, 422, "Invalid")
        assert refused.body["message"].startswith(' "" is invalid: patch: Invalid value: "')
        assert refused.body["message"].endswith(f'": {detail}')
        [cause] = refused.body["details"]["causes"]
        assert cause["reason"] == "FieldValueInvalid" and cause["field"] == "patch"
        assert cause["message"].endswith(detail)
        assert not {"name", "kind", "group"} & refused.body["details"].keys()
        if content_type == STRATEGIC:
            assert cause["message"] == f'Invalid value: "map[bogus:1 data:map[b:2]]": {detail}'

    assert (await kube.ok("GET", path))["data"] == {"a": "1"}  # nothing was patched
    warned = await kube.request("PATCH", path, {"bogus": 1, "data": {"b": "2"}}, content_type=MERGE)
    assert warned.status == 200 and warned.warnings == ['unknown field "bogus"']
    assert warned.body["data"] == {"a": "1", "b": "2"} and "bogus" not in warned.body


async def test_a_json_patch_operations_unknown_keys_are_reported_first(kube: Any, namespace: str) -> None:
    """patch.go `jsonPatcher.applyJSPatch` decodes a JSON patch strictly into `[]jsonPatchOp`
    (op, path, from, value; case-sensitive) before applying it: any other key of an operation is
    `json patch unknown field "[i].key"`, ahead of the patched object's unknown fields, and is
    enough alone for Strict's 422 on `patch` (`applyPatchToCurrentObject`) and Warn's warning."""
    path = f"{cms(namespace)}/jp"
    await kube.ok("POST", cms(namespace), cm("jp", a="1"))
    typo = [{"op": "add", "path": "/data/b", "value": "2", "valu": "3"}]
    with_bogus = [*typo, {"op": "add", "path": "/bogus", "value": 1, "Path": "/x"}]
    for body, detail in [
        (typo, 'json patch unknown field "[0].valu"'),
        (
            with_bogus,
            'json patch unknown field "[0].valu", json patch unknown field "[1].Path", unknown field "bogus"',
        ),
    ]:
        refused = await kube.request(
            "PATCH", path, body, content_type=JSON_PATCH, query={"fieldValidation": "Strict"}
        )
        assert_status(refused.body, 422, "Invalid")
        [cause] = refused.body["details"]["causes"]
        assert cause["field"] == "patch" and cause["message"].endswith(f": strict decoding error: {detail}")
    assert (await kube.ok("GET", path))["data"] == {"a": "1"}  # nothing was patched

    warned = await kube.request("PATCH", path, typo, content_type=JSON_PATCH)
    assert warned.status == 200 and warned.warnings == ['json patch unknown field "[0].valu"']
    assert warned.body["data"] == {"a": "1", "b": "2"}
    ignored = await kube.request(
        "PATCH", path, typo, content_type=JSON_PATCH, query={"fieldValidation": "Ignore"}
    )
    assert ignored.status == 200 and not ignored.warnings


async def test_a_json_patch_that_is_not_a_list_of_operations_is_refused_before_it_applies(
    kube: Any, namespace: str
) -> None:
    """patch.go `jsonPatcher.applyJSPatch`: under Strict and Warn (also without the parameter)
    the patch is decoded into `[]jsonPatchOp` first, and a body, operation or op/path/from of
    the wrong JSON type is 400 `error decoding patch: ` and sigs.k8s.io/json's
    `UnmarshalTypeError` text; under Ignore the operation is only refused when applied."""
    path = f"{cms(namespace)}/jpd"
    await kube.ok("POST", cms(namespace), cm("jpd", a="1"))
    add = {"op": "add", "path": "/data/b", "value": "2"}
    field = "into Go struct field jsonPatchOp"
    for body, error in [
        (add, "object into Go value of type []handlers.jsonPatchOp"),
        ([add, "remove"], "string into Go value of type handlers.jsonPatchOp"),
        ([{**add, "op": 1}], f"number {field}.op of type string"),
        ([add, {"op": "move", "from": ["data"], "path": "/data/c"}], f"array {field}.from of type string"),
    ]:
        for query in ({"fieldValidation": "Strict"}, {"fieldValidation": "Warn"}, None):
            refused = await kube.request("PATCH", path, body, content_type=JSON_PATCH, query=query)
            assert_status(refused.body, 400, "BadRequest")
            assert refused.body["message"] == f"error decoding patch: json: cannot unmarshal {error}"
    ignored = await kube.request(
        "PATCH", path, [{**add, "op": 1}], content_type=JSON_PATCH, query={"fieldValidation": "Ignore"}
    )
    assert ignored.status == 422 and "error decoding patch" not in ignored.body["message"]
    assert (await kube.ok("GET", path))["data"] == {"a": "1"}  # nothing was patched


async def test_a_null_patch_body_changes_nothing_except_as_a_merge_patch(kube: Any, namespace: str) -> None:
    """patch.go: a JSON patch of `null` decodes (evanphx/json-patch `DecodePatch`, and under
    Strict/Warn `[]jsonPatchOp`) as no operations, and a strategic merge patch of `null` as an
    empty map, so each answers 200 with the object unwritten (same resourceVersion) under every
    fieldValidation; a merge patch of `null` is 400 `Invalid JSON Patch` (`doMergePatch`)."""
    path = f"{cms(namespace)}/np"
    made = await kube.ok("POST", cms(namespace), cm("np", a="1"))
    rv = made["metadata"]["resourceVersion"]
    for query in ({"fieldValidation": "Ignore"}, {"fieldValidation": "Strict"}, None):
        for ctype in (JSON_PATCH, STRATEGIC):
            same = await kube.raw("PATCH", path, b"null", content_type=ctype, query=query)
            assert same.status == 200, (ctype, query, same)
            assert same.body["data"] == {"a": "1"} and same.body["metadata"]["resourceVersion"] == rv
        refused = await kube.raw("PATCH", path, b"null", content_type=MERGE, query=query)
        assert_status(refused.body, 400, "BadRequest")
        assert refused.body["message"] == "Invalid JSON Patch"
    assert (await kube.ok("GET", path))["metadata"]["resourceVersion"] == rv


async def test_an_empty_patch_body_is_refused(kube: Any, namespace: str) -> None:
    """patch.go: a body with no JSON value fails Go's decoders with `unexpected end of JSON
    input`: bare for a strategic merge patch (`strategicPatchObject`), prefixed `error decoding
    patch: ` for a JSON or merge patch decoded strictly (Strict, Warn), and under Ignore bare for
    a JSON patch (`DecodePatch`) and `Invalid JSON Patch` for a merge patch (`doMergePatch`)."""
    path = f"{cms(namespace)}/ep"
    await kube.ok("POST", cms(namespace), cm("ep", a="1"))
    end = "unexpected end of JSON input"
    for ctype, query, message in [
        (STRATEGIC, {"fieldValidation": "Ignore"}, end),
        (STRATEGIC, {"fieldValidation": "Strict"}, end),
        (STRATEGIC, None, end),
        (JSON_PATCH, {"fieldValidation": "Ignore"}, end),
        (JSON_PATCH, {"fieldValidation": "Strict"}, f"error decoding patch: {end}"),
        (JSON_PATCH, None, f"error decoding patch: {end}"),
        (MERGE, {"fieldValidation": "Ignore"}, "Invalid JSON Patch"),
        (MERGE, {"fieldValidation": "Warn"}, f"error decoding patch: {end}"),
    ]:
        for body in (b"", b" \n"):
            refused = await kube.raw("PATCH", path, body, content_type=ctype, query=query)
            assert_status(refused.body, 400, "BadRequest")
            assert refused.body["message"] == message, (ctype, query, body)
    assert (await kube.ok("GET", path))["data"] == {"a": "1"}
    await install_crd(kube)
    await kube.ok("POST", gadgets(namespace), gadget("ep"))
    refused = await kube.raw("PATCH", f"{gadgets(namespace)}/ep", b"", content_type=JSON_PATCH)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == f"error decoding patch: {end}"


async def test_status_writes_decode_the_whole_body(kube: Any, namespace: str) -> None:
    """The status subresource decodes its body into the same Go type: an unknown field anywhere in
    it is refused (Strict) or reported (Warn), though only the status is written."""
    await kube.ok("POST", pods(namespace), pod("st"))
    current = await kube.ok("GET", f"{pods(namespace)}/st")
    body = {**current, "status": {**current["status"], "phaze": "Running"}}
    refused = await kube.request(
        "PUT", f"{pods(namespace)}/st/status", body, query={"fieldValidation": "Strict"}
    )
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"].endswith('strict decoding error: unknown field "status.phaze"')
    warned = await kube.request("PUT", f"{pods(namespace)}/st/status", body)
    assert warned.status == 200 and warned.warnings == ['unknown field "status.phaze"']
    assert "phaze" not in warned.body["status"]


async def test_custom_resource_patch_strict_is_invalid_too(kube: Any, namespace: str) -> None:
    """A custom resource's patch goes through the same patcher: Strict is 422 on `patch`."""
    await install_crd(kube)
    await kube.ok("POST", gadgets(namespace), gadget("g"))
    refused = await kube.request(
        "PATCH",
        f"{gadgets(namespace)}/g",
        {"spec": {"bogus": 1}},
        content_type=MERGE,
        query={"fieldValidation": "Strict"},
    )
    assert_status(refused.body, 422, "Invalid")
    [cause] = refused.body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith('strict decoding error: unknown field "spec.bogus"')


async def test_subresource_bodies_are_decoded_as_their_own_kinds(kube: Any, namespace: str) -> None:
    """pods/binding decodes a v1 Binding and `<custom>/scale` an autoscaling/v1 Scale, with the
    same create/update handlers: Strict names the subresource's kind; Warn binds with a warning."""
    await kube.ok("POST", pods(namespace), pod("b"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "no-such-node", "node": "x"},
    }
    path = f"{pods(namespace)}/b/binding"
    refused = await kube.request("POST", path, binding, query={"fieldValidation": "Strict"})
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'Binding in version "v1" cannot be handled as a Binding: strict decoding error: '
        'unknown field "target.node"'
    )
    assert "nodeName" not in (await kube.ok("GET", f"{pods(namespace)}/b"))["spec"]
    bound = await kube.request("POST", path, binding)
    assert bound.status == 201 and bound.warnings == ['unknown field "target.node"']
    assert (await kube.ok("GET", f"{pods(namespace)}/b"))["spec"]["nodeName"] == "no-such-node"

    await install_crd(kube)
    await kube.ok("POST", gadgets(namespace), gadget("g"))
    scale = await kube.ok("GET", f"{gadgets(namespace)}/g/scale")
    wrong = {**scale, "spec": {"replicas": 2, "replicaz": 3}}
    refused = await kube.request(
        "PUT", f"{gadgets(namespace)}/g/scale", wrong, query={"fieldValidation": "Strict"}
    )
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'Scale in version "v1" cannot be handled as a Scale: strict decoding error: '
        'unknown field "spec.replicaz"'
    )
    scaled = await kube.request("PUT", f"{gadgets(namespace)}/g/scale", wrong)
    assert scaled.status == 200 and scaled.warnings == ['unknown field "spec.replicaz"']
    assert scaled.body["spec"] == {"replicas": 2}


async def test_review_and_token_request_bodies_are_decoded_strictly(kube: Any, namespace: str) -> None:
    """TokenReviews, SubjectAccessReviews and serviceaccounts/token (a TokenRequest) store
    nothing, but create.go `createHandler` decodes their bodies like any other: Strict refuses an
    unknown field before the review is made; Warn answers with a warning, without the field."""
    strict = {"fieldValidation": "Strict"}
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "not-a-token-this-cluster-issued", "tokenn": "x"},
    }
    refused = await kube.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review, query=strict)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'TokenReview in version "v1" cannot be handled as a TokenReview: strict decoding error: '
        'unknown field "spec.tokenn"'
    )

    sar = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "conformance-admin",
            "groups": ["system:masters"],
            "resourceAttributes": {"verb": "get", "resource": "pods", "verbb": "delete"},
        },
    }
    warned = await kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert warned.status == 201 and warned.warnings == ['unknown field "spec.resourceAttributes.verbb"']
    assert warned.body["status"]["allowed"] is True
    assert "verbb" not in warned.body["spec"]["resourceAttributes"]

    await kube.ok("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "fv"}})
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"audiences": ["https://example.com"], "expirationSecond": 600},
    }
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/fv/token"
    refused = await kube.request("POST", path, request, query=strict)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        'TokenRequest in version "v1" cannot be handled as a TokenRequest: strict decoding error: '
        'unknown field "spec.expirationSecond"'
    )
    issued = await kube.request("POST", path, request)
    assert issued.status == 201 and issued.warnings == ['unknown field "spec.expirationSecond"']
    assert issued.body["status"]["token"] and "expirationSecond" not in issued.body["spec"]


YAML_CM = b"""kind: ConfigMap
zz: 1
apiVersion: v1
metadata:
  name: yo
  labelz: {}
data: {k: v}
aa: 2
"""


async def test_a_yaml_body_reports_unknown_fields_in_key_order(kube: Any, namespace: str) -> None:
    """apimachinery json.go `Serializer.Decode` converts a YAML body to JSON first
    (sigs.k8s.io/yaml `YAMLToJSON`, which sorts every map's keys), so its unknown fields come in
    key order, not in the order the YAML has them."""
    detail = 'unknown field "aa", unknown field "metadata.labelz", unknown field "zz"'
    yaml_type = "application/yaml"
    strict = {"fieldValidation": "Strict"}
    refused = await kube.raw("POST", cms(namespace), YAML_CM, content_type=yaml_type, query=strict)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        f'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: {detail}'
    )
    made = await kube.raw("POST", cms(namespace), YAML_CM, content_type=yaml_type)
    assert made.status == 201 and made.warnings == detail.split(", ")
    assert made.body["data"] == {"k": "v"} and "labelz" not in made.body["metadata"]


async def test_a_custom_resources_pruned_fields_come_in_key_order(kube: Any, namespace: str) -> None:
    """apiextensions-apiserver pruning/algorithm.go `PruneWithOptions` sorts the paths of the
    fields it prunes before customresource_handler.go reports them."""
    await install_crd(kube)
    body = {**gadget("ko", zz=1, aa=2), "bogus": 3}
    path = gadgets(namespace)
    made = await kube.raw("POST", path, json.dumps(body).encode())
    assert made.status == 201, made
    assert made.warnings == ['unknown field "bogus"', 'unknown field "spec.aa"', 'unknown field "spec.zz"']
    assert made.body["spec"] == {"size": 1, "mode": "slow"} and "bogus" not in made.body
