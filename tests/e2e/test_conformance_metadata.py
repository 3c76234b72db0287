"""Object metadata and Event validation that every write of the operator and its event recorder
passes through: labels, annotations and owner references (apimachinery's ValidateObjectMeta,
which kube-apiserver runs for every kind: rest.BeforeCreate / BeforeUpdate and the custom
resource validator) and core/v1 Events' namespace rules.

Runs like test_conformance.py (fixtures in conftest.py, helpers in conformance_support.py):
against devcluster in the normal test run, against $KUBECONFIG's cluster with `pytest -m e2e`.
"""

from __future__ import annotations

from typing import Any

from e2e.conformance_support import (
    MERGE,
    Obj,
    assert_status,
    causes,
    cm,
    cms,
    gadget,
    gadgets,
    install_crd,
    owner_ref,
)

TOO_LONG = "x" * 64


# ---- labels and annotations --------------------------------------------------------------------


async def test_label_keys_and_values_are_validated(kube: Any, namespace: str) -> None:
    """apimachinery meta/v1/validation ValidateLabels (util/validation IsQualifiedName,
    IsValidLabelValue): values of at most 63 characters, keys `[prefix/]name`; a problem is a
    FieldValueInvalid cause on metadata.labels, on create and update, built-in and custom kinds."""
    fine = cm("labels-ok", {"kubetrain.io/job-name": "a" * 63, "empty": "", "A_b.c-1": "X_y.z-2"})
    await kube.ok("POST", cms(namespace), fine)

    long_value = await kube.request("POST", cms(namespace), cm("long", {"k": TOO_LONG}))
    assert_status(long_value.body, 422, "Invalid")
    assert causes(long_value.body) == [("FieldValueInvalid", "metadata.labels")]
    assert long_value.body["details"]["causes"][0]["message"].endswith("must be no more than 63 characters")
    for key in ("bad key", "-dash", "kubetrain.io/", "Bad_Prefix/x", "a/b/c"):
        refused = await kube.request("POST", cms(namespace), cm("badkey", {key: "v"}))
        assert refused.status == 422, key
        assert {f for _, f in causes(refused.body)} == {"metadata.labels"}, key
    bad_value = await kube.request("POST", cms(namespace), cm("badvalue", {"k": "no spaces"}))
    assert causes(bad_value.body) == [("FieldValueInvalid", "metadata.labels")]

    relabel = await kube.request(
        "PATCH", f"{cms(namespace)}/labels-ok", {"metadata": {"labels": {"k": TOO_LONG}}}, content_type=MERGE
    )
    assert_status(relabel.body, 422, "Invalid")
    await install_crd(kube)
    custom = gadget("labelled")
    custom["metadata"]["labels"] = {"k": TOO_LONG}
    refused = await kube.request("POST", gadgets(namespace), custom)
    assert_status(refused.body, 422, "Invalid")
    assert ("FieldValueInvalid", "metadata.labels") in causes(refused.body)


async def test_annotation_keys_and_total_size_are_validated(kube: Any, namespace: str) -> None:
    """apimachinery api/validation/objectmeta.go ValidateAnnotations: keys are qualified names
    (case-insensitive), and all annotations together hold at most 256 KiB
    (TotalAnnotationSizeLimitB), a FieldValueTooLong cause."""
    ok = cm("notes")
    ok["metadata"]["annotations"] = {"Kubetrain.IO/Note": "x" * 1000}
    await kube.ok("POST", cms(namespace), ok)
    bad_key = cm("bad-note")
    bad_key["metadata"]["annotations"] = {"no spaces": "x"}
    refused = await kube.request("POST", cms(namespace), bad_key)
    assert_status(refused.body, 422, "Invalid")
    assert causes(refused.body) == [("FieldValueInvalid", "metadata.annotations")]
    huge = cm("huge-note")
    huge["metadata"]["annotations"] = {"a": "x" * (256 * 1024)}
    too_big = await kube.request("POST", cms(namespace), huge)
    assert_status(too_big.body, 422, "Invalid")
    assert causes(too_big.body) == [("FieldValueTooLong", "metadata.annotations")]


# ---- owner references --------------------------------------------------------------------------


async def test_owner_references_allow_one_controller(kube: Any, namespace: str) -> None:
    """apimachinery api/validation/objectmeta.go ValidateOwnerReferences, on create and update:
    at most one reference with controller=true; apiVersion, kind, name and uid are required."""
    first = await kube.ok("POST", cms(namespace), cm("boss-a"))
    second = await kube.ok("POST", cms(namespace), cm("boss-b"))
    two = cm("twice")
    two["metadata"]["ownerReferences"] = [
        owner_ref(first, controller=True),
        owner_ref(second, controller=True),
    ]
    refused = await kube.request("POST", cms(namespace), two)
    assert_status(refused.body, 422, "Invalid")
    assert causes(refused.body) == [("FieldValueInvalid", "metadata.ownerReferences")]
    assert refused.body["details"]["causes"][0]["message"].endswith(
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/boss-a and ConfigMap/boss-b"
    )

    one = cm("once")
    one["metadata"]["ownerReferences"] = [owner_ref(first, controller=True), owner_ref(second)]
    child = await kube.ok("POST", cms(namespace), one)
    child["metadata"]["ownerReferences"][1]["controller"] = True
    again = await kube.request("PUT", f"{cms(namespace)}/once", child)
    assert_status(again.body, 422, "Invalid")
    assert causes(again.body) == [("FieldValueInvalid", "metadata.ownerReferences")]

    no_uid = cm("no-uid")
    no_uid["metadata"]["ownerReferences"] = [{**owner_ref(first), "uid": ""}]
    missing = await kube.request("POST", cms(namespace), no_uid)
    assert_status(missing.body, 422, "Invalid")
    assert causes(missing.body) == [("FieldValueInvalid", "metadata.ownerReferences.uid")]


# ---- events ------------------------------------------------------------------------------------


def core_event(name: str, namespace: str, involved_namespace: str, **extra: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "x",
            "namespace": involved_namespace,
        },
        "reason": "Tested",
        "message": "hello",
        "type": "Normal",
        "source": {"component": "conformance"},
        **extra,
    }


async def test_core_events_live_with_their_involved_object(kube: Any, namespace: str) -> None:
    """pkg/apis/core/validation/events.go legacyValidateEvent: a core/v1 Event without eventTime
    must be in its involved object's namespace (involvedObject.namespace "does not match
    event.namespace" otherwise); the recorder's merge patch of count and lastTimestamp is an
    ordinary update."""
    path = f"/api/v1/namespaces/{namespace}/events"
    made = await kube.ok("POST", path, core_event("ev1", namespace, namespace, count=1))
    bumped = await kube.ok(
        "PATCH",
        f"{path}/ev1",
        {"count": 2, "lastTimestamp": "2026-01-02T03:04:05Z"},
        content_type=MERGE,
    )
    assert bumped["count"] == 2 and bumped["lastTimestamp"] == "2026-01-02T03:04:05Z"
    assert bumped["metadata"]["resourceVersion"] != made["metadata"]["resourceVersion"]

    elsewhere = await kube.request("POST", path, core_event("ev2", namespace, "kube-system"))
    assert_status(elsewhere.body, 422, "Invalid")
    assert causes(elsewhere.body) == [("FieldValueInvalid", "involvedObject.namespace")]
    assert elsewhere.body["details"]["causes"][0]["message"].endswith("does not match event.namespace")
    cluster_scoped = await kube.request("POST", path, core_event("ev3", namespace, ""))
    assert causes(cluster_scoped.body) == [("FieldValueInvalid", "involvedObject.namespace")]
