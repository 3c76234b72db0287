"""The unknown fields of built-in kinds (devcluster/apiserver/kinds/builtinschema.py): the paths
kube-apiserver's strict decoder reports (sigs.k8s.io/json `decodeState.newFieldError`), and what
is left of the object, which is what the Go type keeps."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.kinds import builtinschema
from kubetrain.devcluster.apiserver.kinds.builtinschema import (
    MAX_REPORTED,
    unknown_fields,
    unknown_metadata_fields,
)


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"anything": "goes"}, "annotations": {"spec": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
    }


def test_nested_unknown_fields_are_reported_in_document_order_and_dropped() -> None:
    body = pod(
        containers=[
            {"name": "a", "image": "i"},
            {
                "name": "b",
                "image": "i",
                "imagee": "typo",
                "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "x", "extra": 1}}}],
                "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": 1}},
            },
        ],
        Volumes=[],
    )
    body["metadata"]["labelz"] = {"a": "b"}
    found = unknown_fields("", "v1", "Pod", body)
    assert found == [
        "metadata.labelz",
        "spec.containers[1].imagee",
        "spec.containers[1].env[0].valueFrom.fieldRef.extra",
        "spec.Volumes",  # field names are case-sensitive
    ]
    assert body["metadata"] == {"name": "p", "labels": {"anything": "goes"}, "annotations": {"spec": "x"}}
    second = body["spec"]["containers"][1]
    assert "imagee" not in second and second["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "x"}
    assert second["resources"] == {"limits": {"cpu": "1", "nvidia.com/gpu": 1}}  # map keys are data
    assert "Volumes" not in body["spec"]


def test_a_known_object_is_left_alone() -> None:
    body = pod(
        restartPolicy="Never",
        tolerations=[{"key": "k", "operator": "Exists"}],
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
        },
    )
    body["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    before = copy.deepcopy(body)
    assert unknown_fields("", "v1", "Pod", body) == []
    assert body == before


def test_without_drop_the_object_is_unchanged() -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}, "spec": {}}
    before = copy.deepcopy(body)
    assert unknown_fields("", "v1", "ConfigMap", body, drop=False) == ["spec"]
    assert body == before


def test_raw_json_and_scalar_leaves_are_not_looked_into() -> None:
    """metav1.FieldsV1 holds raw JSON; IntOrString and Quantity are scalars (a wrong type there
    is a type error, not an unknown field)."""
    body = pod()
    body["metadata"]["managedFields"] = [
        {"manager": "m", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}
    ]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "targetPort": {"odd": 1}}]},
    }
    assert unknown_fields("", "v1", "Pod", body) == []
    assert unknown_fields("", "v1", "Service", svc) == []
    assert svc["spec"]["ports"][0]["targetPort"] == {"odd": 1}


def test_an_empty_go_struct_has_no_fields() -> None:
    """CustomResourceSubresourceStatus is `struct{}`: anything inside is unknown."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"versions": [{"name": "v1", "subresources": {"status": {"enabled": True}}}]},
    }
    assert unknown_fields("apiextensions.k8s.io", "v1", "CustomResourceDefinition", crd) == [
        "spec.versions[0].subresources.status.enabled"
    ]
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}


def test_other_groups_and_subresource_kinds() -> None:
    lease = {"spec": {"holderIdentity": "a", "leaseDurationSecond": 15}}
    assert unknown_fields("coordination.k8s.io", "v1", "Lease", lease) == ["spec.leaseDurationSecond"]
    eviction = {"metadata": {"name": "p"}, "deleteOptions": {"gracePeriodSecond": 0}}
    assert unknown_fields("policy", "v1", "Eviction", eviction) == ["deleteOptions.gracePeriodSecond"]
    binding = {"target": {"kind": "Node", "name": "n", "node": "n"}}
    assert unknown_fields("", "v1", "Binding", binding) == ["target.node"]


def test_a_kind_outside_the_schema_is_not_checked() -> None:
    body = {"spec": {"anything": 1}}
    assert not builtinschema.has_schema("example.com", "v1", "Gadget")
    assert unknown_fields("example.com", "v1", "Gadget", body) == []
    assert body == {"spec": {"anything": 1}}


def test_at_most_a_hundred_are_reported_and_all_are_dropped() -> None:
    body: dict[str, Any] = {"metadata": {"name": "c"}, **{f"f{i}": i for i in range(150)}}
    found = unknown_fields("", "v1", "ConfigMap", body)
    assert found == [f"f{i}" for i in range(MAX_REPORTED)]
    assert body == {"metadata": {"name": "c"}}


def test_a_custom_resource_s_unknown_metadata_fields_are_sorted_at_each_level_and_dropped() -> None:
    """objectmeta/coerce.go `GetObjectMetaWithOptions` decodes a JSON round trip of the metadata
    (Go writes map keys sorted) strictly into ObjectMeta."""
    obj = {
        "metadata": {
            "name": "a",
            "zz": 1,
            "ownerReferences": [{"uid": "u", "zoo": 1, "bar": 2}],
            "labels": {"anything": "goes"},
            "aa": {"x": 1},
        },
        "spec": {"whatever": 1},
    }
    assert unknown_metadata_fields(obj) == [
        "metadata.aa",
        "metadata.ownerReferences[0].bar",
        "metadata.ownerReferences[0].zoo",
        "metadata.zz",
    ]
    assert obj == {
        "metadata": {"name": "a", "ownerReferences": [{"uid": "u"}], "labels": {"anything": "goes"}},
        "spec": {"whatever": 1},
    }


def test_values_go_decodes_with_their_own_unmarshal_json_are_opaque() -> None:
    """A CRD's JSONSchemaProps unions (`items`, `additionalProperties`) and JSON values
    (`default`), and every object's managedFields `fieldsV1`, are handed to their UnmarshalJSON
    whole: no duplicate inside them is looked for."""
    prop = {
        "type": "array",
        "items": {"type": "object", "additionalProperties": {"type": "string"}},
        "default": [{"a": "b"}],
    }
    crd = {
        "metadata": {"name": "x", "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
        "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"properties": {"p": prop}}}}]},
    }
    schema_path = "spec.versions[0].schema.openAPIV3Schema.properties.p"
    assert builtinschema.opaque_paths("apiextensions.k8s.io", "v1", "CustomResourceDefinition", crd) == [
        "metadata.managedFields[0].fieldsV1",
        f"{schema_path}.items",
        f"{schema_path}.default",
    ]
    assert builtinschema.opaque_paths("example.com", "v1", "Gadget", crd) == []
