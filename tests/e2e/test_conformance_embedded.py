"""The metadata of a resource embedded in a custom resource (`x-kubernetes-embedded-resource`):
kube-apiserver decodes it into ObjectMeta (apiextensions-apiserver objectmeta/algorithm.go
`CoerceWithOptions`, after pruning in customresource_handler.go
`unstructuredSchemaCoercer.apply`), so its unknown fields are dropped and reported after the
pruned ones, and a wrongly typed field fails the decoding, under every fieldValidation.

Runs like test_conformance.py: against devcluster in the normal test run, against $KUBECONFIG's
cluster with `pytest -m e2e`.
"""

from __future__ import annotations

from typing import Any

from crd_builders import crd
from e2e.conformance_support import MERGE, Obj, assert_status, install_crd

GROUP = "embeds.conformance.kubetrain.io"
PLURAL = "holders"
_EMBEDDED: Obj = {
    "type": "object",
    "x-kubernetes-embedded-resource": True,
    "x-kubernetes-preserve-unknown-fields": True,
}
CRD = crd(
    {
        "type": "object",
        "properties": {"template": _EMBEDDED, "extras": {"type": "array", "items": _EMBEDDED}},
    },
    group=GROUP,
    plural=PLURAL,
    kind="Holder",
)
STRICT = {"fieldValidation": "Strict"}


def holders(ns: str) -> str:
    return f"/apis/{GROUP}/v1/namespaces/{ns}/{PLURAL}"


def holder(name: str, template_meta: Any, **spec: Any) -> Obj:
    template = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": template_meta}
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Holder",
        "metadata": {"name": name},
        "spec": {"template": template, **spec},
    }


async def test_unknown_embedded_metadata_fields_are_dropped_and_reported_after_pruned_ones(
    kube: Any, namespace: str
) -> None:
    await install_crd(kube, CRD)
    meta = {"name": "t", "zeta": 1, "labels": {"a": "1"}, "alpha": {"x": 1}}
    owner = {"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u", "bogus": True}
    extras = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"ownerReferences": [owner]}}]
    body = holder("h", meta, extras=extras, pruned=1)
    detail = (
        'unknown field "spec.pruned", unknown field "spec.extras[0].metadata.ownerReferences[0].bogus", '
        'unknown field "spec.template.metadata.alpha", unknown field "spec.template.metadata.zeta"'
    )
    refused = await kube.request("POST", holders(namespace), body, query=STRICT)
    assert_status(refused.body, 400, "BadRequest")
    assert refused.body["message"] == (
        f'Holder in version "v1" cannot be handled as a Holder: strict decoding error: {detail}'
    )
    made = await kube.request("POST", holders(namespace), body)
    assert made.status == 201, made
    assert made.warnings == detail.split(", ")
    stored = await kube.ok("GET", f"{holders(namespace)}/h")
    assert stored["spec"]["template"]["metadata"] == {"name": "t", "labels": {"a": "1"}}
    assert stored["spec"]["extras"][0]["metadata"] == {
        "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u"}]
    }
    silent = await kube.request(
        "POST", holders(namespace), holder("quiet", meta), query={"fieldValidation": "Ignore"}
    )
    assert silent.status == 201 and silent.warnings == [], silent
    assert silent.body["spec"]["template"]["metadata"] == {"name": "t", "labels": {"a": "1"}}


async def test_embedded_metadata_is_written_back_as_object_meta(kube: Any, namespace: str) -> None:
    """SetObjectMeta: empty omitempty fields left out, timestamps in UTC without fractions, a
    null label value as an empty string, null metadata as an empty object."""
    await install_crd(kube, CRD)
    meta = {
        "name": "",
        "labels": {"a": None},
        "annotations": {},
        "creationTimestamp": "2024-05-01T10:00:00.25+02:00",
        "finalizers": [],
    }
    made = await kube.ok(
        "POST",
        holders(namespace),
        holder("w", meta, extras=[{"apiVersion": "v1", "kind": "K", "metadata": None}]),
    )
    assert made["spec"]["template"]["metadata"] == {
        "labels": {"a": ""},
        "creationTimestamp": "2024-05-01T08:00:00Z",
    }
    assert made["spec"]["extras"][0]["metadata"] == {}


async def test_a_wrongly_typed_embedded_metadata_field_fails_the_decoding(kube: Any, namespace: str) -> None:
    await install_crd(kube, CRD)
    for query in (STRICT, {"fieldValidation": "Ignore"}):
        refused = await kube.request("POST", holders(namespace), holder("bad", {"labels": "x"}), query=query)
        assert_status(refused.body, 400, "BadRequest")
        assert refused.body["message"] == (
            'Holder in version "v1" cannot be handled as a Holder: spec.template.metadata: Invalid value: '
            '{"labels":"x"}: json: cannot unmarshal string into Go struct field ObjectMeta.labels of type '
            "map[string]string"
        )
    kind = await kube.request("POST", holders(namespace), holder("k", {}, extras=[{"kind": 3}]))
    assert_status(kind.body, 400, "BadRequest")
    assert kind.body["message"].endswith(
        "cannot be handled as a Holder: spec.extras[0].kind: Invalid value: 3: must be a string"
    )
    when = await kube.request("POST", holders(namespace), holder("t", {"creationTimestamp": "May 1"}))
    assert when.body["message"].endswith(
        'spec.template.metadata: Invalid value: {"creationTimestamp":"May 1"}: parsing time "May 1" as '
        '"2006-01-02T15:04:05Z07:00": cannot parse "May 1" as "2006"'
    )


async def test_a_patch_making_embedded_metadata_malformed_is_invalid(kube: Any, namespace: str) -> None:
    """patch.go `applyPatchToCurrentObject`: a decoding error that is not a strict one is 422 on
    the field `patch`, its value the patched object."""
    await install_crd(kube, CRD)
    await kube.ok("POST", holders(namespace), holder("p", {"name": "t"}))
    patch = {"spec": {"template": {"metadata": {"generation": 1.5}}}}
    refused = await kube.request("PATCH", f"{holders(namespace)}/p", patch, content_type=MERGE)
    assert_status(refused.body, 422, "Invalid")
    [cause] = refused.body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(
        ': spec.template.metadata: Invalid value: {"generation":1.5,"name":"t"}: json: cannot unmarshal '
        "number 1.5 into Go struct field ObjectMeta.generation of type int64"
    )
    assert '\\"generation\\":1.5' in cause["message"]
