"""Write-path semantics the operator, webhook certificates and leader election rely on: delete
preconditions, optimistic concurrency on patches and custom resources, the status and scale
subresources, Leases, watch bookmarks, patch media types, field validation and
the access reviews.

Like test_conformance.py (fixtures in conftest.py, helpers in conformance_support.py) this runs
against devcluster in the normal test run and against $KUBECONFIG's cluster with `pytest -m e2e`.
Every assertion is kube-apiserver's behaviour; each test names the upstream code or document it
follows. Where devcluster disagrees, devcluster is wrong.
"""

from __future__ import annotations

import asyncio
from typing import Any

from e2e.conformance_support import (
    GROUP,
    MERGE,
    PLURAL,
    assert_status,
    causes,
    cm,
    cms,
    gadget,
    gadgets,
    install_crd,
)

STALE = "the object has been modified; please apply your changes to the latest version and try again"
NO_SUCH_UID = "00000000-0000-0000-0000-000000000000"


def leases(ns: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"


# ---- delete preconditions ----------------------------------------------------------------------


async def test_delete_preconditions_on_uid_and_resource_version(kube: Any, namespace: str) -> None:
    """apiserver registry/rest/delete.go BeforeDelete: a failed precondition is a 409 Conflict
    on the object's Kind (what the operator's uid-guarded deletes rely on)."""
    made = await kube.ok("POST", cms(namespace), cm("pre"))
    uid = made["metadata"]["uid"]
    path = f"{cms(namespace)}/pre"

    wrong_uid = await kube.request("DELETE", path, {"preconditions": {"uid": NO_SUCH_UID}})
    assert_status(wrong_uid.body, 409, "Conflict")
    assert wrong_uid.body["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "pre": the UID in the precondition '
        f"({NO_SUCH_UID}) does not match the UID in record ({uid}). "
        "The object might have been deleted and then recreated"
    )
    assert wrong_uid.body["details"] == {"name": "pre", "kind": "ConfigMap"}

    updated = await kube.ok("PUT", path, {**made, "data": {"k": "v"}})
    old_rv, new_rv = made["metadata"]["resourceVersion"], updated["metadata"]["resourceVersion"]
    stale = await kube.request("DELETE", path, {"preconditions": {"uid": uid, "resourceVersion": old_rv}})
    assert_status(stale.body, 409, "Conflict")
    assert stale.body["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "pre": the ResourceVersion in the precondition '
        f"({old_rv}) does not match the ResourceVersion in record ({new_rv}). "
        "The object might have been modified"
    )
    assert (await kube.ok("GET", path))["data"] == {"k": "v"}  # nothing was deleted

    await kube.ok("DELETE", path, {"preconditions": {"uid": uid, "resourceVersion": new_rv}})
    assert (await kube.request("GET", path)).status == 404


async def test_immediate_delete_answers_a_success_status(kube: Any, namespace: str) -> None:
    """apiserver registry/generic/registry/store.go finalizeDelete: without ReturnDeletedObject
    (ConfigMaps, custom resources) an immediate delete answers a Success Status whose details name
    the resource (not the kind) and the uid; an object held by a finalizer is returned instead."""
    made = await kube.ok("POST", cms(namespace), cm("gone"))
    gone = await kube.ok("DELETE", f"{cms(namespace)}/gone")
    assert gone["kind"] == "Status" and gone["status"] == "Success"
    assert gone["details"] == {"name": "gone", "kind": "configmaps", "uid": made["metadata"]["uid"]}
    await install_crd(kube)
    custom = await kube.ok("POST", gadgets(namespace), gadget("gone"))
    answer = await kube.ok("DELETE", f"{gadgets(namespace)}/gone")
    assert answer["kind"] == "Status" and answer["status"] == "Success"
    assert answer["details"] == {
        "name": "gone",
        "group": GROUP,
        "kind": PLURAL,
        "uid": custom["metadata"]["uid"],
    }


# ---- optimistic concurrency --------------------------------------------------------------------


async def test_patch_naming_a_stale_resource_version_is_409_conflict(kube: Any, namespace: str) -> None:
    """A resourceVersion in a patch is a precondition (the patched object is updated with it:
    apiserver registry/generic/registry/store.go Update; controller-runtime's
    MergeFromWithOptimisticLock relies on it); a patch without one applies to the latest object."""
    made = await kube.ok("POST", cms(namespace), cm("p", n="0"))
    path = f"{cms(namespace)}/p"
    first_rv = made["metadata"]["resourceVersion"]
    ok = await kube.ok(
        "PATCH", path, {"metadata": {"resourceVersion": first_rv}, "data": {"n": "1"}}, content_type=MERGE
    )
    assert ok["data"] == {"n": "1"} and ok["metadata"]["resourceVersion"] != first_rv
    stale = await kube.request(
        "PATCH", path, {"metadata": {"resourceVersion": first_rv}, "data": {"n": "2"}}, content_type=MERGE
    )
    assert_status(stale.body, 409, "Conflict")
    assert stale.body["message"] == f'Operation cannot be fulfilled on configmaps "p": {STALE}'
    blind = await kube.ok("PATCH", path, {"data": {"n": "3"}}, content_type=MERGE)
    assert blind["data"] == {"n": "3"}


async def test_a_write_that_changes_nothing_keeps_the_resource_version(kube: Any, namespace: str) -> None:
    """etcd3 store GuaranteedUpdate stores nothing when the new bytes equal the old, and the
    field manager leaves managedFields alone on a no-op (kubernetes/kubernetes#81673, #116865):
    no new resourceVersion, so no watch event — what keeps the operator's own unchanged status
    writes from waking it."""
    made = await kube.ok("POST", cms(namespace), cm("same", k="v"))
    rv = made["metadata"]["resourceVersion"]
    assert (await kube.ok("PUT", f"{cms(namespace)}/same", made))["metadata"]["resourceVersion"] == rv
    noop = await kube.ok("PATCH", f"{cms(namespace)}/same", {"data": {"k": "v"}}, content_type=MERGE)
    assert noop["metadata"]["resourceVersion"] == rv
    await install_crd(kube)
    job = await kube.ok("POST", gadgets(namespace), gadget("same"))
    job = await kube.ok("PUT", f"{gadgets(namespace)}/same/status", {**job, "status": {"phase": "Running"}})
    again = await kube.ok("PUT", f"{gadgets(namespace)}/same/status", job)
    assert again["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]


async def test_custom_resource_update_needs_a_resource_version(kube: Any, namespace: str) -> None:
    """Custom resources do not allow unconditional updates (apiextensions-apiserver
    registry/customresource/strategy.go AllowUnconditionalUpdate: false, so store.go Update answers
    422 "must be specified for an update"); ConfigMaps do (a PUT without one overwrites)."""
    await install_crd(kube)
    made = await kube.ok("POST", gadgets(namespace), gadget("u1"))
    blind = {**made, "metadata": {"name": "u1"}, "spec": {"size": 2}}
    refused = await kube.request("PUT", f"{gadgets(namespace)}/u1", blind)
    assert_status(refused.body, 422, "Invalid")
    assert causes(refused.body) == [("FieldValueInvalid", "metadata.resourceVersion")]
    assert refused.body["details"]["name"] == "u1"
    assert (await kube.ok("GET", f"{gadgets(namespace)}/u1"))["spec"]["size"] == 1

    await kube.ok("POST", cms(namespace), cm("u2", k="1"))
    overwritten = await kube.ok("PUT", f"{cms(namespace)}/u2", cm("u2", k="2"))
    assert overwritten["data"] == {"k": "2"}


# ---- status and scale subresources -------------------------------------------------------------


async def test_custom_resource_status_write_changes_only_status(kube: Any, namespace: str) -> None:
    """apiextensions-apiserver registry/customresource/status_strategy.go PrepareForUpdate: a
    status write copies everything but `status` from the stored object — spec, labels and
    annotations included — and is optimistic like any update."""
    await install_crd(kube)
    body = gadget("st")
    body["metadata"]["labels"] = {"keep": "me"}
    made = await kube.ok("POST", gadgets(namespace), body)
    sent = {
        **made,
        "metadata": {
            **made["metadata"],
            "labels": {"keep": "changed", "new": "x"},
            "annotations": {"a": "b"},
        },
        "spec": {"size": 7},
        "status": {"phase": "Running"},
    }
    written = await kube.ok("PUT", f"{gadgets(namespace)}/st/status", sent)
    assert written["status"] == {"phase": "Running"}
    assert written["spec"]["size"] == 1
    assert written["metadata"]["labels"] == {"keep": "me"}
    assert "annotations" not in written["metadata"]
    assert written["metadata"]["generation"] == 1
    stale = await kube.request("PUT", f"{gadgets(namespace)}/st/status", {**made, "status": {"phase": "Old"}})
    assert_status(stale.body, 409, "Conflict")
    assert stale.body["message"] == f'Operation cannot be fulfilled on {PLURAL}.{GROUP} "st": {STALE}'


async def test_custom_resource_scale_subresource(kube: Any, namespace: str) -> None:
    """apiextensions-apiserver registry/customresource/etcd.go ScaleREST, scaleFromCustomResource:
    an autoscaling/v1 Scale read from specReplicasPath, statusReplicasPath (0 when unset) and
    labelSelectorPath; a write sets specReplicasPath (a new generation), its resourceVersion a
    precondition."""
    await install_crd(kube)
    made = await kube.ok("POST", gadgets(namespace), gadget("sc", size=2))
    path = f"{gadgets(namespace)}/sc/scale"
    scale = await kube.ok("GET", path)
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["metadata"]["name"] == "sc" and scale["metadata"]["uid"] == made["metadata"]["uid"]
    assert scale["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"]["replicas"] == 0 and not scale["status"].get("selector")

    await kube.ok(
        "PATCH",
        f"{gadgets(namespace)}/sc/status",
        {"status": {"ready": 2, "selector": "app=sc"}},
        content_type=MERGE,
    )
    scale = await kube.ok("GET", path)
    assert scale["status"] == {"replicas": 2, "selector": "app=sc"}

    scaled = await kube.ok("PUT", path, {**scale, "spec": {"replicas": 4}})
    assert scaled["spec"] == {"replicas": 4}
    job = await kube.ok("GET", f"{gadgets(namespace)}/sc")
    assert job["spec"]["size"] == 4 and job["metadata"]["generation"] == 2
    stale = await kube.request("PUT", path, {**scale, "spec": {"replicas": 5}})
    assert_status(stale.body, 409, "Conflict")
    patched = await kube.ok("PATCH", path, {"spec": {"replicas": 3}}, content_type=MERGE)
    assert patched["spec"] == {"replicas": 3}
    assert (await kube.ok("GET", f"{gadgets(namespace)}/sc"))["spec"]["size"] == 3


# ---- leader election ---------------------------------------------------------------------------


async def test_lease_micro_time_round_trip_and_conflicting_renewals(kube: Any, namespace: str) -> None:
    """coordination.k8s.io/v1 Lease as client-go's leaderelection uses it: MicroTime fields
    (metav1.MicroTime, RFC 3339 with microseconds) come back exactly as written, a renewal with a
    stale resourceVersion is 409, and pkg/apis/coordination/validation ValidateLeaseSpec rejects
    leaseDurationSeconds <= 0 and leaseTransitions < 0."""
    spec = {
        "holderIdentity": "candidate-a",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-02T03:04:05.123456Z",
        "renewTime": "2026-01-02T03:04:05.123456Z",
        "leaseTransitions": 0,
    }
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader"},
        "spec": spec,
    }
    made = await kube.ok("POST", leases(namespace), body)
    assert made["spec"] == spec
    renewed = await kube.ok(
        "PUT",
        f"{leases(namespace)}/leader",
        {**made, "spec": {**spec, "renewTime": "2026-01-02T03:04:07.000001Z"}},
    )
    assert renewed["spec"]["renewTime"] == "2026-01-02T03:04:07.000001Z"
    assert (await kube.ok("GET", f"{leases(namespace)}/leader"))["spec"] == renewed["spec"]

    takeover = {**spec, "holderIdentity": "candidate-b", "leaseTransitions": 1}
    lost = await kube.request("PUT", f"{leases(namespace)}/leader", {**made, "spec": takeover})
    assert_status(lost.body, 409, "Conflict")
    assert (
        lost.body["message"]
        == f'Operation cannot be fulfilled on leases.coordination.k8s.io "leader": {STALE}'
    )
    assert lost.body["details"] == {"name": "leader", "group": "coordination.k8s.io", "kind": "leases"}

    bad = {
        **body,
        "metadata": {"name": "bad"},
        "spec": {**spec, "leaseDurationSeconds": 0, "leaseTransitions": -1},
    }
    refused = await kube.request("POST", leases(namespace), bad)
    assert_status(refused.body, 422, "Invalid")
    assert sorted(causes(refused.body)) == [
        ("FieldValueInvalid", "spec.leaseDurationSeconds"),
        ("FieldValueInvalid", "spec.leaseTransitions"),
    ]


# ---- watch bookmarks ---------------------------------------------------------------------------


async def test_watch_bookmarks_carry_only_a_resource_version(
    kube: Any, namespace: str, conformance_cluster: Any
) -> None:
    """API concepts, "Watch bookmarks": a BOOKMARK's object is of the watched kind with only
    metadata.resourceVersion set, and it never goes back in resourceVersion. The API server may
    send none (the cacher sends one 2 s before a watch's deadline, as devcluster does)."""
    own = {"test": "bookmarks"}
    made = await kube.ok("POST", cms(namespace), cm("bm", own))
    updated = await kube.ok("PUT", f"{cms(namespace)}/bm", {**made, "data": {"k": "v"}})
    query = {
        "resourceVersion": made["metadata"]["resourceVersion"],
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "4",
        "labelSelector": "test=bookmarks",
    }
    async with asyncio.timeout(30):
        events = [ev async for ev in kube.watch(cms(namespace), query)]
    changes = [e for e in events if e["type"] != "BOOKMARK"]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in changes] == [("MODIFIED", "bm")]
    assert changes[0]["object"]["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
    bookmarks = [e["object"] for e in events if e["type"] == "BOOKMARK"]
    for obj in bookmarks:
        assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"
        assert obj["metadata"]["resourceVersion"]
        assert not {"name", "namespace", "uid", "labels"} & obj["metadata"].keys()
        assert "data" not in obj
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    if conformance_cluster.devcluster is not None:
        assert bookmarks  # devcluster sends the pre-deadline bookmark, so the checks above ran


# ---- media types and field validation ----------------------------------------------------------


async def test_patch_media_types(kube: Any, namespace: str) -> None:
    """apiserver endpoints/handlers/patch.go PatchResource: a content type outside the resource's
    list is 415 UnsupportedMediaType before the object is looked at; custom resources take JSON
    patch, merge patch and apply, not strategic merge patch (apiextensions-apiserver
    customresource_handler.go), built-in kinds take strategic merge patch too."""
    await install_crd(kube)
    await kube.ok("POST", gadgets(namespace), gadget("mt"))
    strategic = await kube.request(
        "PATCH",
        f"{gadgets(namespace)}/mt",
        {"spec": {"size": 2}},
        content_type="application/strategic-merge-patch+json",
    )
    assert_status(strategic.body, 415, "UnsupportedMediaType")
    assert "application/merge-patch+json" in strategic.body["message"]
    assert "application/json-patch+json" in strategic.body["message"]
    assert "strategic" not in strategic.body["message"]
    missing = await kube.request(
        "PATCH",
        f"{gadgets(namespace)}/none",
        {"spec": {}},
        content_type="application/strategic-merge-patch+json",
    )
    assert missing.status == 415

    await kube.ok("POST", cms(namespace), cm("mt", a="1"))
    merged = await kube.ok(
        "PATCH",
        f"{cms(namespace)}/mt",
        {"data": {"b": "2"}},
        content_type="application/strategic-merge-patch+json",
    )
    assert merged["data"] == {"a": "1", "b": "2"}
    # plain JSON is not a patch format
    odd = await kube.request("PATCH", f"{cms(namespace)}/mt", {"data": {}}, content_type="application/json")
    assert_status(odd.body, 415, "UnsupportedMediaType")


async def test_field_validation_of_unknown_custom_resource_fields(kube: Any, namespace: str) -> None:
    """API concepts, "Field validation" (fieldValidation, default Warn since 1.27): Strict
    refuses an unknown field with 400 `strict decoding error: unknown field "..."`, Warn drops it
    with a Warning header, Ignore drops it silently (what `kubetrain dev` submits jobs with)."""
    await install_crd(kube)
    strict = await kube.request(
        "POST", gadgets(namespace), gadget("fv", bogus=1), query={"fieldValidation": "Strict"}
    )
    assert_status(strict.body, 400, "BadRequest")
    assert 'strict decoding error: unknown field "spec.bogus"' in strict.body["message"]
    assert (await kube.request("GET", f"{gadgets(namespace)}/fv")).status == 404

    warned = await kube.request(
        "POST", gadgets(namespace), gadget("fv", bogus=1), query={"fieldValidation": "Warn"}
    )
    assert warned.status == 201 and "bogus" not in warned.body["spec"]
    assert 'unknown field "spec.bogus"' in warned.warnings
    ignored = await kube.request(
        "POST", gadgets(namespace), gadget("fv2", bogus=1), query={"fieldValidation": "Ignore"}
    )
    assert ignored.status == 201 and "bogus" not in ignored.body["spec"]
    assert not ignored.warnings


# ---- access reviews ----------------------------------------------------------------------------


async def test_access_reviews(kube: Any) -> None:
    """authorization.k8s.io/v1 SubjectAccessReview and authentication.k8s.io/v1 TokenReview, as
    the webhook and dashboard delegate to them: 201 with `status` filled in; system:masters is
    allowed everything; a review naming no user or group is 422 (pkg/apis/authorization/
    validation ValidateSubjectAccessReviewSpec); an unknown token does not authenticate."""
    sar = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "conformance-admin",
            "groups": ["system:masters"],
            "resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "default"},
        },
    }
    allowed = await kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert allowed.status == 201
    assert allowed.body["kind"] == "SubjectAccessReview" and allowed.body["status"]["allowed"] is True
    nobody = {**sar, "spec": {"resourceAttributes": sar["spec"]["resourceAttributes"]}}
    refused = await kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", nobody)
    assert_status(refused.body, 422, "Invalid")
    assert ("FieldValueInvalid", "spec.user") in causes(refused.body)

    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "not-a-token-this-cluster-issued"},
    }
    answered = await kube.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert answered.status == 201
    assert answered.body["kind"] == "TokenReview"
    assert not answered.body["status"].get("authenticated")
    assert not answered.body["status"].get("user")
