"""devcluster serves core/v1 PersistentVolumeClaims as kube-apiserver does: create (Pending,
volumeMode Filesystem), 422 with kube's field paths for a claim it refuses, the immutable spec,
list/watch/delete, garbage collection by ownerReference; and it refuses a pod whose volumeMount
names no volume of the pod (the error a JobSet-less PVC mount gets)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.devcluster import DevCluster

NS = "default"


def pvc(name: str, **spec: Any) -> dict[str, Any]:
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": body}


async def refused(v1: client.CoreV1Api, body: dict[str, Any]) -> list[dict[str, str]]:
    with pytest.raises(ApiException) as err:
        await v1.create_namespaced_persistent_volume_claim(NS, body)
    assert err.value.status == 422, err.value.body
    status = json.loads(err.value.body)
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(f'PersistentVolumeClaim "{body["metadata"]["name"]}" is invalid: ')
    causes: list[dict[str, str]] = status["details"]["causes"]
    return causes


async def test_created_pending_listed_and_deleted(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    sent = pvc("data")
    sent["status"] = {"phase": "Bound"}  # dropped on create
    made = await v1.create_namespaced_persistent_volume_claim(NS, sent)
    assert made.status.phase == "Pending"
    assert made.spec.volume_mode == "Filesystem"
    assert made.spec.resources.requests == {"storage": "20Gi"}
    listed = await v1.list_namespaced_persistent_volume_claim(NS)
    assert [p.metadata.name for p in listed.items] == ["data"]
    with pytest.raises(ApiException) as taken:
        await v1.create_namespaced_persistent_volume_claim(NS, pvc("data"))
    assert taken.value.status == 409
    await v1.delete_namespaced_persistent_volume_claim("data", NS)
    assert (await v1.list_namespaced_persistent_volume_claim(NS)).items == []


async def test_invalid_claims_are_refused_with_kubes_field_paths(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    causes = await refused(v1, pvc("no-modes", accessModes=[], resources={}))
    assert [(c["field"], c["reason"]) for c in causes] == [
        ("spec.accessModes", "FieldValueRequired"),
        ("spec.resources[storage]", "FieldValueRequired"),
    ]
    assert "at least 1 access mode is required" in causes[0]["message"]
    causes = await refused(v1, pvc("bad-mode", accessModes=["ReadWriteSometimes"]))
    assert causes == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", '
            '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
            "field": "spec.accessModes",
        }
    ]
    causes = await refused(v1, pvc("mixed", accessModes=["ReadWriteOncePod", "ReadOnlyMany"]))
    assert [(c["field"], c["reason"]) for c in causes] == [("spec.accessModes", "FieldValueForbidden")]
    for storage in ("0", "-1Gi"):
        causes = await refused(v1, pvc("zero", resources={"requests": {"storage": storage}}))
        assert causes == [
            {
                "reason": "FieldValueInvalid",
                "message": f'Invalid value: "{storage}": must be greater than zero',
                "field": "spec.resources[storage]",
            }
        ]
    causes = await refused(v1, pvc("Not_A_Name"))
    assert [c["field"] for c in causes] == ["metadata.name"]
    # A single-mode ReadWriteOncePod claim and a dotted (DNS-1123 subdomain) name are fine.
    await v1.create_namespaced_persistent_volume_claim(NS, pvc("a.b", accessModes=["ReadWriteOncePod"]))


async def test_spec_is_immutable(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_persistent_volume_claim(NS, pvc("fixed"))
    with pytest.raises(ApiException) as err:
        await v1.patch_namespaced_persistent_volume_claim(
            "fixed", NS, {"spec": {"accessModes": ["ReadWriteMany"]}}
        )
    assert err.value.status == 422
    assert '"field":"spec"' in err.value.body.replace(" ", "")
    # Labels are not the spec.
    await v1.patch_namespaced_persistent_volume_claim("fixed", NS, {"metadata": {"labels": {"a": "b"}}})


async def test_garbage_collected_with_its_owner(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    owner = await v1.create_namespaced_config_map(NS, {"metadata": {"name": "owner"}})
    owned = pvc("owned")
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": owner.metadata.uid,
            "controller": True,
        }
    ]
    await v1.create_namespaced_persistent_volume_claim(NS, owned)
    await v1.create_namespaced_persistent_volume_claim(NS, pvc("kept"))
    await v1.delete_namespaced_config_map("owner", NS)
    await devcluster.settle()  # the garbage collector's work
    names = [p.metadata.name for p in (await v1.list_namespaced_persistent_volume_claim(NS)).items]
    assert names == ["kept"]


async def test_pod_mounting_no_volume_of_its_own_is_refused(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    container = {
        "name": "c",
        "image": "busybox",
        "volumeMounts": [{"name": "initializer", "mountPath": "/w"}],
    }
    body: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"containers": [container]}}
    with pytest.raises(ApiException) as err:
        await v1.create_namespaced_pod(NS, body)
    assert err.value.status == 422
    assert 'spec.containers[0].volumeMounts[0].name: Not found: \\"initializer\\"' in err.value.body
    body["spec"]["volumes"] = [{"name": "initializer", "persistentVolumeClaim": {"claimName": "x"}}]
    await v1.create_namespaced_pod(NS, body)
