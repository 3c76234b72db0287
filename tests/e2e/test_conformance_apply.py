"""managedFields and server-side apply as kube-apiserver records and answers them: the Update
entry of a write (k8s.io/apimachinery pkg/util/managedfields, `managedFieldsUpdater.Update`),
apply's required fieldManager (`ValidatePatchOptions`), create-on-apply (patch.go
`applyPatcher`), conflicts (conflict.go `NewConflictError`) and `force`, dry run, and the
`subresource` of a status write.

Runs against devcluster and, with `pytest -m e2e`, against $KUBECONFIG's cluster; every
assertion is what upstream guarantees (times and entry order are not compared).
"""

from __future__ import annotations

import json
from typing import Any

from e2e.conformance_support import MERGE, assert_status, cm, cms, gadget, gadgets, install_crd

APPLY = "application/apply-patch+yaml"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CSA = "kubectl-client-side-apply"


def client_side_applied(name: str, **data: str) -> dict[str, Any]:
    """A ConfigMap as `kubectl apply` (client-side) creates it: its manifest in the annotation."""
    made = cm(name, **data)
    made["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(cm(name, **data)) + "\n"}
    return made


def entry(obj: dict[str, Any], manager: str, operation: str) -> dict[str, Any]:
    found = [
        e
        for e in obj["metadata"].get("managedFields") or []
        if (e["manager"], e["operation"]) == (manager, operation)
    ]
    assert len(found) == 1, obj["metadata"].get("managedFields")
    return found[0]


async def test_a_write_records_its_field_manager(kube: Any, namespace: str) -> None:
    made = await kube.ok("POST", cms(namespace), cm("owned", k="v"), query={"fieldManager": "maker"})
    mine = entry(made, "maker", "Update")
    assert mine["apiVersion"] == "v1" and mine["fieldsType"] == "FieldsV1" and mine["time"]
    assert mine["fieldsV1"] == {"f:data": {".": {}, "f:k": {}}}
    path = f"{cms(namespace)}/owned"
    edited = await kube.ok(
        "PATCH", path, {"data": {"k": "w"}}, content_type=MERGE, query={"fieldManager": "editor"}
    )
    assert entry(edited, "editor", "Update")["fieldsV1"] == {"f:data": {"f:k": {}}}
    assert entry(edited, "maker", "Update")["fieldsV1"] == {"f:data": {}}  # it keeps the map itself


async def test_apply_needs_a_field_manager(kube: Any, namespace: str) -> None:
    resp = await kube.request("PATCH", f"{cms(namespace)}/nobody", cm("nobody", k="v"), content_type=APPLY)
    assert_status(resp.body, 422, "Invalid")
    assert resp.body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


async def test_apply_creates_then_conflicts_with_another_managers_change(kube: Any, namespace: str) -> None:
    path = f"{cms(namespace)}/applied"
    dry = await kube.ok(
        "PATCH", path, cm("applied", k="v"), content_type=APPLY, query={"fieldManager": "ci", "dryRun": "All"}
    )
    assert dry["data"] == {"k": "v"}
    assert (await kube.request("GET", path)).status == 404
    made = await kube.ok(
        "PATCH", path, cm("applied", k="v"), content_type=APPLY, query={"fieldManager": "ci"}
    )
    assert made["data"] == {"k": "v"}
    assert entry(made, "ci", "Apply")["fieldsV1"] == {"f:data": {"f:k": {}}}
    await kube.ok(
        "PATCH", path, {"data": {"k": "edited"}}, content_type=MERGE, query={"fieldManager": "kubectl-edit"}
    )

    clash = await kube.request(
        "PATCH", path, cm("applied", k="v"), content_type=APPLY, query={"fieldManager": "ci"}
    )
    assert_status(clash.body, 409, "Conflict")
    assert (
        clash.body["message"]
        == 'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.k'
    )
    assert clash.body["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-edit" using v1',
            "field": ".data.k",
        }
    ]
    forced = await kube.ok(
        "PATCH", path, cm("applied", k="v"), content_type=APPLY, query={"fieldManager": "ci", "force": "true"}
    )
    assert forced["data"] == {"k": "v"}
    assert not any(e["manager"] == "kubectl-edit" for e in forced["metadata"]["managedFields"])


async def test_a_status_write_is_recorded_with_its_subresource(kube: Any, namespace: str) -> None:
    await install_crd(kube)
    made = await kube.ok("POST", gadgets(namespace), gadget("tracked"), query={"fieldManager": "maker"})
    spec = entry(made, "maker", "Update")["fieldsV1"]["f:spec"]
    assert "." in spec and "f:size" in spec
    status = await kube.ok(
        "PUT",
        f"{gadgets(namespace)}/tracked/status",
        {**made, "status": {"phase": "Running"}},
        query={"fieldManager": "reporter"},
    )
    reporter = entry(status, "reporter", "Update")
    assert reporter["subresource"] == "status"
    assert reporter["fieldsV1"] == {"f:status": {".": {}, "f:phase": {}}}


async def test_scale_of_a_custom_resource_and_its_managed_fields(kube: Any, namespace: str) -> None:
    """kube-apiserver's /scale field manager of a custom resource has no autoscaling/v1 Scale
    type (kubernetes/kubernetes#116311, #131892): an apply fails with 500 once its configuration
    is a Scale, and a merge patch scales the resource while its writer gets no entry and the
    replicas path (specReplicasPath `.spec.size`) leaves the manager that owned it."""
    await install_crd(kube)
    made = await kube.ok("POST", gadgets(namespace), gadget("sized", size=2), query={"fieldManager": "maker"})
    assert "f:size" in entry(made, "maker", "Update")["fieldsV1"]["f:spec"]
    path = f"{gadgets(namespace)}/sized/scale"
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "sized"}}

    refused = await kube.request(
        "PATCH",
        path,
        {**scale, "spec": {"replicas": 3}},
        content_type=APPLY,
        query={"fieldManager": "scaler"},
    )
    assert refused.status == 500 and refused.body["code"] == 500 and not refused.body.get("reason")
    assert refused.body["message"] == (
        "failed to create typed patch object (/sized; autoscaling/v1, Kind=Scale): "
        "no corresponding type for autoscaling/v1, Kind=Scale"
    )
    wrong = await kube.request(
        "PATCH", path, gadget("sized", size=3), content_type=APPLY, query={"fieldManager": "scaler"}
    )
    assert_status(wrong.body, 400, "BadRequest")
    assert wrong.body["message"] == f"invalid object type: {gadget('sized')['apiVersion']}, Kind=Gadget"
    nameless = await kube.request("PATCH", path, scale, content_type=APPLY)
    assert_status(nameless.body, 422, "Invalid")
    missing = await kube.request(
        "PATCH", f"{gadgets(namespace)}/nothing/scale", scale, content_type=APPLY, query={"fieldManager": "s"}
    )
    assert_status(missing.body, 404, "NotFound")
    assert (await kube.ok("GET", f"{gadgets(namespace)}/sized"))["spec"]["size"] == 2

    await kube.ok(
        "PATCH", path, {"spec": {"replicas": 3}}, content_type=MERGE, query={"fieldManager": "scaler"}
    )
    job = await kube.ok("GET", f"{gadgets(namespace)}/sized")
    assert job["spec"]["size"] == 3
    assert all(e["manager"] != "scaler" for e in job["metadata"]["managedFields"])
    assert "f:size" not in entry(job, "maker", "Update")["fieldsV1"]["f:spec"]


async def test_kubectl_server_side_apply_takes_over_what_client_side_apply_set(
    kube: Any, namespace: str
) -> None:
    """lastAppliedManager: an apply by the `kubectl` manager that conflicts only on fields the
    live object still has as its last-applied-configuration says goes on as if forced;
    lastAppliedUpdater: the annotation then holds the applied configuration."""
    path = f"{cms(namespace)}/upgraded"
    await kube.ok(
        "POST", cms(namespace), client_side_applied("upgraded", k="v", keep="x"), query={"fieldManager": CSA}
    )
    other = await kube.request(
        "PATCH", path, cm("upgraded", k="w"), content_type=APPLY, query={"fieldManager": "ci"}
    )
    assert_status(other.body, 409, "Conflict")  # another manager gets no upgrade
    assert other.body["message"] == f'Apply failed with 1 conflict: conflict with "{CSA}" using v1: .data.k'

    applied = await kube.ok(
        "PATCH", path, cm("upgraded", k="w"), content_type=APPLY, query={"fieldManager": "kubectl"}
    )
    assert applied["data"] == {"k": "w", "keep": "x"}
    assert entry(applied, "kubectl", "Apply")["fieldsV1"] == {"f:data": {"f:k": {}}}
    assert "f:k" not in entry(applied, CSA, "Update")["fieldsV1"]["f:data"]
    annotation = applied["metadata"]["annotations"][LAST_APPLIED]
    assert (
        annotation
        == '{"apiVersion":"v1","data":{"k":"w"},"kind":"ConfigMap","metadata":{"name":"upgraded"}}\n'
    )

    await kube.ok(
        "POST", cms(namespace), client_side_applied("edited", k="v", n="1"), query={"fieldManager": CSA}
    )
    edited = f"{cms(namespace)}/edited"
    await kube.ok("PATCH", edited, {"data": {"n": "2"}}, content_type=MERGE, query={"fieldManager": CSA})
    clash = await kube.request(
        "PATCH", edited, cm("edited", k="w", n="3"), content_type=APPLY, query={"fieldManager": "kubectl"}
    )
    assert_status(clash.body, 409, "Conflict")  # n no longer has its last-applied value
    assert clash.body["message"] == f'Apply failed with 1 conflict: conflict with "{CSA}" using v1: .data.n'
