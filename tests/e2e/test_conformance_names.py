"""Names, generateName, finalizers and the uid, as a kubectl user meets them over HTTP: each
kind's name function (apimachinery api/validation generic.go: NameIsDNSSubdomain,
NameIsDNS1035Label; RBAC's minimalNameRequirements) applied to a generateName with its trailing
dash masked and to the generated name; ValidateFinalizers and core's validateKubeFinalizerName
(a custom resource's finalizer is warned about instead); an update naming another uid (a PUT's
storage precondition, a patch's immutable field).

Runs like test_conformance.py (fixtures in conftest.py, helpers in conformance_support.py):
against devcluster in the normal test run, against $KUBECONFIG's cluster with `pytest -m e2e`.
"""

from __future__ import annotations

import re
from typing import Any

from e2e.conformance_support import MERGE, assert_status, causes, cm, cms, gadget, gadgets, install_crd

from kubetrain.devcluster.apiserver.kinds.objectmeta import DNS1035_ERROR, DNS1123_SUBDOMAIN_ERROR

GENERATED = "[bcdfghjklmnpqrstvwxz2456789]{5}"  # apimachinery utilrand's alphabet


def _messages(body: Any) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


def _service(**md: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": md, "spec": {"ports": [{"port": 80}]}}


async def test_a_generate_name_is_checked_by_the_kinds_name_rule(kube: Any, namespace: str) -> None:
    """BeforeCreate generates the name, then ValidateObjectMetaAccessor checks the generateName
    (nameFn(prefix=true): a trailing dash masked) and the generated name with the kind's rule."""
    svcs = f"/api/v1/namespaces/{namespace}/services"
    made = await kube.ok("POST", svcs, _service(generateName="web-"))
    assert re.fullmatch(f"web-{GENERATED}", made["metadata"]["name"])

    bad_cm = cm("")
    bad_cm["metadata"] = {"generateName": "Bad_"}
    refused = await kube.request("POST", cms(namespace), bad_cm)
    assert_status(refused.body, 422, "Invalid")
    (prefix_cause, name_cause) = _messages(refused.body)
    assert prefix_cause == ("metadata.generateName", f'Invalid value: "Bad_": {DNS1123_SUBDOMAIN_ERROR}')
    assert name_cause[0] == "metadata.name"
    assert re.fullmatch(f'Invalid value: "Bad_{GENERATED}": .*', name_cause[1])

    # a Service's name is a DNS-1035 label: a subdomain prefix is not enough
    refused = await kube.request("POST", svcs, _service(generateName="1web-"))
    assert_status(refused.body, 422, "Invalid")
    assert _messages(refused.body)[0] == ("metadata.generateName", f'Invalid value: "1web-": {DNS1035_ERROR}')
    assert causes(refused.body) == [
        ("FieldValueInvalid", "metadata.generateName"),
        ("FieldValueInvalid", "metadata.name"),
    ]

    # RBAC names are path segments, a generateName included (its rule ignores `prefix`)
    roles = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "rules": []}
    await kube.ok("POST", roles, {**role, "metadata": {"name": "system:job_reader"}})
    refused = await kube.request("POST", roles, {**role, "metadata": {"generateName": "."}})
    assert_status(refused.body, 422, "Invalid")
    assert _messages(refused.body) == [("metadata.generateName", "Invalid value: \".\": may not be '.'")]


async def test_a_too_long_name_is_told_its_length_only(kube: Any, namespace: str) -> None:
    """IsDNS1123Subdomain reports the length and the format as separate problems."""
    long_name = "a" * 254
    refused = await kube.request("POST", cms(namespace), cm(long_name))
    assert_status(refused.body, 422, "Invalid")
    assert _messages(refused.body) == [
        ("metadata.name", f'Invalid value: "{long_name}": must be no more than 253 characters')
    ]


async def test_finalizers_are_validated(kube: Any, namespace: str) -> None:
    """ValidateFinalizers (qualified names; not both orphan and foregroundDeletion) for every
    kind; an unqualified finalizer that is not a standard one is refused for a ConfigMap (core's
    ValidateObjectMeta) and only warned about for a custom resource."""
    mine = cm("held")
    mine["metadata"]["finalizers"] = ["cleanup"]
    refused = await kube.request("POST", cms(namespace), mine)
    assert_status(refused.body, 422, "Invalid")
    assert _messages(refused.body) == [
        (
            "metadata.finalizers[0]",
            'Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified',
        )
    ]
    both = cm("both")
    both["metadata"]["finalizers"] = ["orphan", "foregroundDeletion"]
    refused = await kube.request("POST", cms(namespace), both)
    assert_status(refused.body, 422, "Invalid")
    assert causes(refused.body) == [("FieldValueInvalid", "metadata.finalizers")]
    assert refused.body["details"]["causes"][0]["message"].endswith(
        "finalizer orphan and foregroundDeletion cannot be both set"
    )

    await install_crd(kube)
    held = gadget("held")
    held["metadata"]["finalizers"] = ["cleanup"]
    made = await kube.request("POST", gadgets(namespace), held)
    assert made.status == 201, made.body
    assert (
        'metadata.finalizers[0]: "cleanup": prefer a domain-qualified finalizer name to avoid '
        "accidental conflicts with other finalizer writers"
    ) in made.warnings
    # let the namespace go
    await kube.ok(
        "PATCH", f"{gadgets(namespace)}/held", {"metadata": {"finalizers": None}}, content_type=MERGE
    )


async def test_an_update_may_not_change_the_uid(kube: Any, namespace: str) -> None:
    """A PUT's body uid is a storage precondition (rest.DefaultUpdatedObjectInfo.Preconditions):
    409; a patch's is checked by ValidateObjectMetaAccessorUpdate: 422 at metadata.uid."""
    stored = await kube.ok("POST", cms(namespace), cm("keep"))
    uid = stored["metadata"]["uid"]
    other = "00000000-0000-0000-0000-000000000001"
    stored["metadata"]["uid"] = other
    conflict = await kube.request("PUT", f"{cms(namespace)}/keep", stored)
    assert_status(conflict.body, 409, "Conflict")
    assert conflict.body["message"].endswith(
        f"Precondition failed: UID in precondition: {other}, UID in object meta: {uid}"
    )
    patched = await kube.request(
        "PATCH", f"{cms(namespace)}/keep", {"metadata": {"uid": other}}, content_type=MERGE
    )
    assert_status(patched.body, 422, "Invalid")
    assert set(_messages(patched.body)) == {("metadata.uid", f'Invalid value: "{other}": field is immutable')}
    again = await kube.ok("GET", f"{cms(namespace)}/keep")
    assert again["metadata"]["uid"] == uid


async def test_a_patch_through_events_k8s_io_may_not_change_the_uid(kube: Any, namespace: str) -> None:
    """The events.k8s.io/v1 view of an Event is patched like any object: a changed uid is an
    immutable field (422), not a failed precondition."""
    core = f"/api/v1/namespaces/{namespace}/events"
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "ev-uid"},
        "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": namespace},
        "reason": "Tested",
        "message": "hello",
        "type": "Normal",
        "source": {"component": "conformance"},
    }
    made = await kube.ok("POST", core, event)
    other = "00000000-0000-0000-0000-000000000002"
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/ev-uid"
    refused = await kube.request("PATCH", path, {"metadata": {"uid": other}}, content_type=MERGE)
    assert_status(refused.body, 422, "Invalid")
    assert ("metadata.uid", f'Invalid value: "{other}": field is immutable') in _messages(refused.body)
    assert (await kube.ok("GET", f"{core}/ev-uid"))["metadata"]["uid"] == made["metadata"]["uid"]
