"""Who owns the replicas after a write to a custom resource's /scale (kinds/scalefields.py):
k8s.io/apimachinery's `ScaleHandler.ToParent` cases (scalehandler_test.go) and the refusal of an
apply, as kube-apiserver answers it for custom resources."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.base.types import ResourceType
from kubetrain.devcluster.apiserver.kinds import managedfields, scalefields
from kubetrain.devcluster.apiserver.kinds.fieldpaths import f

APPS = {"apps/v1": (f("spec"), f("replicas"))}


def entry(manager: str, op: str, version: str, fields: dict[str, Any], sub: str = "", **more: Any) -> Any:
    out = {"manager": manager, "operation": op, "apiVersion": version, "fieldsType": "FieldsV1"}
    return {**out, "fieldsV1": fields, **({"subresource": sub} if sub else {}), **more}


def to_parent(parent: list[Any], scale: list[Any], gv: str = "apps/v1", paths: Any = None) -> list[Any]:
    managed = scalefields.to_parent(
        managedfields.decode(parent), gv, APPS if paths is None else paths, managedfields.decode(scale)
    )
    return sorted(managedfields.encode(managed), key=lambda e: (e["manager"], e.get("subresource", "")))


REPLICAS_AND_SELECTOR = {"f:spec": {"f:replicas": {}, "f:selector": {}}}
SELECTOR = {"f:spec": {"f:selector": {}}}
REPLICAS = {"f:spec": {"f:replicas": {}}}


@pytest.mark.parametrize("parent_op", ["Apply", "Update"])
@pytest.mark.parametrize("scale_op", ["Apply", "Update"])
def test_another_manager_on_scale_takes_the_replicas(parent_op: str, scale_op: str) -> None:
    got = to_parent(
        [entry("test", parent_op, "apps/v1", REPLICAS_AND_SELECTOR)],
        [entry("scale", scale_op, "autoscaling/v1", REPLICAS, "scale")],
    )
    assert got == [
        entry("scale", scale_op, "apps/v1", REPLICAS, "scale"),
        entry("test", parent_op, "apps/v1", SELECTOR),
    ]


def test_the_same_identifier_on_both_keeps_its_parent_entry() -> None:
    """`apply without stealing`: the Scale's entry of the parent's identifier leaves it whole."""
    got = to_parent(
        [entry("test", "Apply", "apps/v1", REPLICAS_AND_SELECTOR)],
        [
            entry("test", "Apply", "autoscaling/v1", REPLICAS),
            entry("test", "Apply", "autoscaling/v1", REPLICAS, "scale"),
        ],
    )
    assert got == [
        entry("test", "Apply", "apps/v1", REPLICAS_AND_SELECTOR),
        entry("test", "Apply", "apps/v1", REPLICAS, "scale"),
    ]


def test_entries_of_unknown_versions_are_dropped_and_a_scale_entry_without_replicas_is_not_kept() -> None:
    got = to_parent(
        [
            entry("test", "Apply", "apps/v1", SELECTOR),
            entry("another", "Apply", "apps/v10", SELECTOR),
        ],
        [entry("scale", "Update", "autoscaling/v1", {"f:status": {"f:replicas": {}}}, "scale")],
    )
    assert got == [entry("test", "Apply", "apps/v1", SELECTOR)]


def test_a_manager_left_without_fields_is_dropped_and_times_stay() -> None:
    got = to_parent(
        [
            entry("only", "Update", "apps/v1", REPLICAS, time="2026-01-01T00:00:00Z"),
            entry("both", "Update", "apps/v1", REPLICAS_AND_SELECTOR, time="2026-01-01T00:01:00Z"),
        ],
        [],
    )
    assert got == [entry("both", "Update", "apps/v1", SELECTOR, time="2026-01-01T00:01:00Z")]


def test_versions_map_to_their_own_replicas_path() -> None:
    """`multi-version`, and a version without a scale subresource (path None) kept whole."""
    paths = {
        "apps/v1": (f("spec"), f("the-replicas")),
        "apps/v2": (f("spec"), f("not-the-replicas")),
        "apps/v3": None,
    }
    got = to_parent(
        [
            entry("test", "Apply", "apps/v1", {"f:spec": {"f:the-replicas": {}, "f:selector": {}}}),
            entry("other", "Apply", "apps/v2", {"f:spec": {"f:not-the-replicas": {}, "f:selector": {}}}),
            entry("old", "Apply", "apps/v3", {"f:spec": {"f:the-replicas": {}}}),
        ],
        [entry("scale", "Update", "autoscaling/v1", REPLICAS, "scale")],
        paths=paths,
    )
    assert got == [
        entry("old", "Apply", "apps/v3", {"f:spec": {"f:the-replicas": {}}}),
        entry("other", "Apply", "apps/v2", SELECTOR),
        entry("scale", "Update", "apps/v1", {"f:spec": {"f:the-replicas": {}}}, "scale"),
        entry("test", "Apply", "apps/v1", SELECTOR),
    ]


def test_a_custom_resources_mappings_use_its_spec_replicas_path() -> None:
    rt = ResourceType("kubetrain.io", ["v1", "v1beta1"], "gadgets", "Gadget", True, custom=True)
    assert scalefields.mappings(rt) == {"kubetrain.io/v1": None, "kubetrain.io/v1beta1": None}
    rt.scale = {"specReplicasPath": ".spec.worker.replicas", "statusReplicasPath": ".status.ready"}
    path = (f("spec"), f("worker"), f("replicas"))
    assert scalefields.mappings(rt) == {"kubetrain.io/v1": path, "kubetrain.io/v1beta1": path}


SCALE = {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 3}}


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (
            {**SCALE, "metadata": {"name": "j", "namespace": "ns"}},
            500,
            "failed to create typed patch object (ns/j; autoscaling/v1, Kind=Scale): "
            "no corresponding type for autoscaling/v1, Kind=Scale",
        ),
        (
            SCALE,
            500,
            "failed to create typed patch object (/; autoscaling/v1, Kind=Scale): "
            "no corresponding type for autoscaling/v1, Kind=Scale",
        ),
        ({**SCALE, "apiVersion": "autoscaling/v2"}, 400, "invalid object type: autoscaling/v2, Kind=Scale"),
        (None, 400, "invalid object type: /, Kind="),
        ({**SCALE, "metadata": {"managedFields": []}}, 400, "metadata.managedFields must be nil"),
        ([1], 400, "error decoding patch: the apply configuration must be an object"),
    ],
)
def test_an_apply_to_a_custom_resources_scale_is_refused(body: Any, code: int, message: str) -> None:
    err = scalefields.apply_refusal(body)
    assert (err.code, err.message) == (code, message)
    status = err.status()
    assert ("reason" in status) == (code != 500)  # an error that is no metav1.Status has no reason


def to_subresource(parent: list[Any]) -> list[Any]:
    managed = scalefields.to_subresource(managedfields.decode(parent), APPS)
    return sorted(managedfields.encode(managed), key=lambda e: (e["manager"], e.get("subresource", "")))


def test_to_subresource_keeps_the_replicas_owners_at_autoscaling_v1() -> None:
    """scalehandler_test.go `TestTransformManagedFieldsToSubresource`."""
    when = "2013-02-03T00:00:00Z"
    assert to_subresource(
        [
            entry("manager-1", "Apply", "apps/v1", {"f:spec": {"f:another-field": {}}}),
            entry("manager-2", "Apply", "apps/v1", REPLICAS, time=when),
            entry("manager-3", "Update", "apps/v1", REPLICAS, "scale"),
            entry("manager-4", "Apply", "apps/v10", REPLICAS),
        ]
    ) == [
        entry("manager-2", "Apply", "autoscaling/v1", REPLICAS, time=when),
        entry("manager-3", "Update", "autoscaling/v1", REPLICAS, "scale"),
    ]


def test_the_old_scale_webhooks_see_carries_the_replicas_owners() -> None:
    rt = ResourceType("kubetrain.io", ["v1"], "gadgets", "Gadget", True, custom=True)
    rt.scale = {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready"}
    job = {
        "apiVersion": "kubetrain.io/v1",
        "kind": "Gadget",
        "metadata": {
            "name": "g",
            "namespace": "ns",
            "managedFields": [
                entry(
                    "maker", "Update", "kubetrain.io/v1", {"f:spec": {"f:size": {}, "f:image": {}}}, time="t"
                ),
                entry("other", "Update", "kubetrain.io/v1", {"f:spec": {"f:image": {}}}, time="t"),
            ],
        },
        "spec": {"size": 2},
    }
    old = scalefields.old_scale(rt, job)
    assert old["spec"] == {"replicas": 2}
    assert old["metadata"]["managedFields"] == [
        entry("maker", "Update", "autoscaling/v1", REPLICAS, time="t")
    ]
    del job["metadata"]["managedFields"]
    assert "managedFields" not in scalefields.old_scale(rt, job)["metadata"]
