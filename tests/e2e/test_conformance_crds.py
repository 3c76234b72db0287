"""CustomResourceDefinition validation: refusals of apiextensions-apiserver's validation.go and
structural-schema rules (pkg/apiserver/schema) with their field paths and messages, on create
and update. Each CRD uses a throwaway group of its own and is deleted afterwards.

Runs like test_conformance.py (fixtures in conftest.py, helpers in conformance_support.py):
against devcluster in the normal test run, against $KUBECONFIG's cluster with `pytest -m e2e`.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from crd_builders import crd
from e2e.conformance_support import MERGE, Obj, assert_status

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def widget_crd(group: str) -> Obj:
    """A valid Widget CRD in `group`: spec.replicas (integer, minimum 1) and status.ready."""
    return crd(
        {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}},
        group=group,
        status={"type": "object", "properties": {"ready": {"type": "integer"}}},
    )


@pytest.fixture
async def group(kube: Any) -> AsyncIterator[str]:
    """A throwaway API group; its widgets CRD, if one got created, is deleted afterwards."""
    name = f"crd-{uuid.uuid4().hex[:8]}.conformance.kubetrain.io"
    yield name
    await kube.request("DELETE", f"{CRDS}/widgets.{name}")


def spec_of(crd: Obj) -> Obj:
    schema: Obj = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


async def refused(kube: Any, crd: Obj) -> tuple[str, str, str]:
    """The one cause (reason, field, message) a create of `crd` is refused with; the Status
    message is kube-apiserver's `Kind.group "name" is invalid: field: message`."""
    resp = await kube.request("POST", CRDS, crd)
    assert_status(resp.body, 422, "Invalid")
    [cause] = resp.body["details"]["causes"]
    name = crd["metadata"]["name"]
    kind = "CustomResourceDefinition.apiextensions.k8s.io"
    expected = f'{kind} "{name}" is invalid: {cause["field"]}: {cause["message"]}'
    assert resp.body["message"] == expected
    assert resp.body["details"]["name"] == name
    return cause["reason"], cause["field"], cause["message"]


async def established(kube: Any, crd: Obj) -> Obj:
    await kube.ok("POST", CRDS, crd)
    async with asyncio.timeout(30):
        while True:
            got: Obj = await kube.ok("GET", f"{CRDS}/{crd['metadata']['name']}")
            conditions = {c["type"]: c["status"] for c in got.get("status", {}).get("conditions", [])}
            if conditions.get("Established") == "True":
                return got
            await asyncio.sleep(0.2)


Edit = Callable[[Obj], None]


def _untyped(crd: Obj) -> None:
    del spec_of(crd)["type"]


def _no_scope(crd: Obj) -> None:
    del crd["spec"]["scope"]


def _scale_under_status(crd: Obj) -> None:
    scale = {"specReplicasPath": ".status.ready", "statusReplicasPath": ".status.ready"}
    crd["spec"]["versions"][0]["subresources"] = {"status": {}, "scale": scale}


def _column_type(crd: Obj) -> None:
    column = {"name": "Replicas", "type": "int", "jsonPath": ".spec.replicas"}
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [column]


def _bad_default(crd: Obj) -> None:
    spec_of(crd)["properties"]["replicas"]["default"] = 0


def _map_key_not_required(crd: Obj) -> None:
    spec_of(crd)["properties"]["ports"] = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["port"],
        "items": {"type": "object", "properties": {"port": {"type": "integer"}}},
    }


def _both_property_kinds(crd: Obj) -> None:
    spec_of(crd)["additionalProperties"] = {"type": "string"}


SPEC = "spec.validation.openAPIV3Schema.properties[spec]"
REFUSALS: list[tuple[Edit, tuple[str, str, str]]] = [
    (
        _untyped,
        (
            "FieldValueRequired",
            f"{SPEC}.type",
            "Required value: must not be empty for specified object fields",
        ),
    ),
    (_no_scope, ("FieldValueRequired", "spec.scope", "Required value")),
    (
        _scale_under_status,
        (
            "FieldValueInvalid",
            "spec.subresources.scale.specReplicasPath",
            'Invalid value: ".status.ready": should be a json path under .spec',
        ),
    ),
    (
        _column_type,
        (
            "FieldValueInvalid",
            "spec.additionalPrinterColumns[0].type",
            'Invalid value: "int": must be one of boolean,date,integer,number,string',
        ),
    ),
    (
        _bad_default,
        (
            "FieldValueInvalid",
            f"{SPEC}.properties[replicas].default",
            f"Invalid value: 0: {SPEC}.properties[replicas].default in body "
            "should be greater than or equal to 1",
        ),
    ),
    (
        _map_key_not_required,
        (
            "FieldValueRequired",
            f"{SPEC}.properties[ports].items.properties[port].default",
            "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default "
            "or be a required property",
        ),
    ),
    (
        _both_property_kinds,
        (
            "FieldValueForbidden",
            f"{SPEC}.additionalProperties",
            "Forbidden: additionalProperties and properties are mutual exclusive",
        ),
    ),
]


@pytest.mark.parametrize(("edit", "cause"), REFUSALS, ids=[e.__name__.strip("_") for e, _ in REFUSALS])
async def test_invalid_crds_are_refused_naming_the_field(
    kube: Any, group: str, edit: Edit, cause: tuple[str, str, str]
) -> None:
    crd = widget_crd(group)
    edit(crd)
    assert await refused(kube, crd) == cause
    assert (await kube.request("GET", f"{CRDS}/widgets.{group}")).status == 404


async def test_scope_and_kind_are_immutable_once_established(kube: Any, group: str) -> None:
    await established(kube, widget_crd(group))
    resp = await kube.request(
        "PATCH", f"{CRDS}/widgets.{group}", {"spec": {"scope": "Cluster"}}, content_type=MERGE
    )
    assert_status(resp.body, 422, "Invalid")
    assert [(c["field"], c["message"]) for c in resp.body["details"]["causes"]] == [
        ("spec.scope", 'Invalid value: "Cluster": field is immutable')
    ]


async def test_a_stored_version_cannot_be_dropped(kube: Any, group: str) -> None:
    crd = widget_crd(group)
    second = copy.deepcopy(crd["spec"]["versions"][0])
    second.update(name="v2", storage=False)
    crd["spec"]["versions"].append(second)
    current = await established(kube, crd)
    current["spec"]["versions"][0]["storage"] = False
    current["spec"]["versions"][1]["storage"] = True
    moved: Obj = await kube.ok("PUT", f"{CRDS}/widgets.{group}", current)
    assert moved["status"]["storedVersions"] == ["v1", "v2"]
    del moved["spec"]["versions"][0]
    resp = await kube.request("PUT", f"{CRDS}/widgets.{group}", moved)
    assert_status(resp.body, 422, "Invalid")
    assert [(c["field"], c["message"]) for c in resp.body["details"]["causes"]] == [
        (
            "status.storedVersions[0]",
            'Invalid value: "v1": missing from spec.versions; v1 was previously a storage version, and must '
            "remain in spec.versions until a storage migration ensures no data remains persisted in v1 and "
            "removes v1 from status.storedVersions",
        )
    ]


def _with_rule(crd: Obj, rule: Obj) -> None:
    spec_of(crd)["x-kubernetes-validations"] = [rule]


async def test_a_cel_rule_that_does_not_parse_is_refused_on_create_and_update(kube: Any, group: str) -> None:
    """The value is Go's json.Marshal of the rule; the text after `Syntax error:` is the CEL
    parser's own (cel-go's on a cluster, devcluster's differs), so only its start is compared."""
    crd = widget_crd(group)
    _with_rule(crd, {"rule": "self.replicas >"})
    reason, field, message = await refused(kube, crd)
    assert (reason, field) == ("FieldValueInvalid", f"{SPEC}.x-kubernetes-validations[0].rule")
    assert message.startswith(
        'Invalid value: {"Rule":"self.replicas \\u003e","Message":"","MessageExpression":"",'
        '"Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: '
        "ERROR: <input>:1:16: Syntax error: "
    )
    assert (await kube.request("GET", f"{CRDS}/widgets.{group}")).status == 404

    _with_rule(crd, {"rule": "self.replicas > 0", "messageExpression": "'replicas: ' +"})
    assert (await refused(kube, crd))[1] == f"{SPEC}.x-kubernetes-validations[0].messageExpression"

    _with_rule(crd, {"rule": "self.replicas > 0"})
    current = await established(kube, crd)
    _with_rule(current, {"rule": "self.replicas > 0 &&"})
    resp = await kube.request("PUT", f"{CRDS}/widgets.{group}", current)
    assert_status(resp.body, 422, "Invalid")
    assert [c["field"] for c in resp.body["details"]["causes"]] == [
        f"{SPEC}.x-kubernetes-validations[0].rule"
    ]


async def test_a_cel_rule_calling_a_kubernetes_library_function_is_accepted(kube: Any, group: str) -> None:
    crd = widget_crd(group)
    spec_of(crd)["properties"]["home"] = {"type": "string"}
    _with_rule(crd, {"rule": "!has(self.home) || isURL(self.home)"})
    await established(kube, crd)
