"""devcluster write-path behaviour beyond the conformance module: pod binding and graceful deletion,
admission webhooks in the write path, dry run, scale subresource, CRD removal, no-op updates."""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.certs.generate import generate_bundle
from kubetrain.devcluster import DevCluster

NS = "default"


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }


async def test_binding_then_graceful_delete_left_for_the_kubelet(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_pod(NS, pod("p"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    await v1.create_namespaced_binding(NS, binding, _preload_content=False)
    bound = await v1.read_namespaced_pod("p", NS)
    assert bound.spec.node_name == "node-1"
    again = await v1.create_namespaced_binding(NS, binding, _preload_content=False)
    assert again.status == 409
    assert "is already assigned to node" in (await again.json())["message"]

    deleting = await v1.delete_namespaced_pod("p", NS)
    assert deleting.metadata.deletion_grace_period_seconds == 30
    assert deleting.metadata.deletion_timestamp is not None
    still = await v1.read_namespaced_pod("p", NS)  # the kubelet has not confirmed yet
    assert still.metadata.deletion_timestamp is not None
    await v1.delete_namespaced_pod("p", NS, grace_period_seconds=0)
    with pytest.raises(ApiException) as gone:
        await v1.read_namespaced_pod("p", NS)
    assert gone.value.status == 404


async def test_no_op_update_keeps_the_resource_version(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    made = await v1.create_namespaced_config_map(NS, {"metadata": {"name": "same"}, "data": {"a": "b"}})
    again = await v1.replace_namespaced_config_map("same", NS, made)
    assert again.metadata.resource_version == made.metadata.resource_version


CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "scalers.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "scalers", "singular": "scaler", "kind": "Scaler"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


async def with_scalers(api: Any) -> tuple[Any, Any]:
    """The Scaler CRD (CRD) installed; the apiextensions and custom-objects clients on `api`."""
    ext = client.ApiextensionsV1Api(api)
    await ext.create_custom_resource_definition(CRD)
    return ext, client.CustomObjectsApi(api)


def scaler(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Scaler",
        "metadata": {"name": name},
        "spec": {"replicas": replicas},
    }


async def test_scale_subresource_and_crd_removal(devcluster: DevCluster, api: Any) -> None:
    ext, custom = await with_scalers(api)
    await custom.create_namespaced_custom_object("example.com", "v1", NS, "scalers", scaler("s", 2))
    scale = await custom.get_namespaced_custom_object_scale("example.com", "v1", NS, "scalers", "s")
    assert scale["spec"]["replicas"] == 2
    await custom.patch_namespaced_custom_object_scale(
        "example.com", "v1", NS, "scalers", "s", [{"op": "replace", "path": "/spec/replicas", "value": 5}]
    )
    obj = await custom.get_namespaced_custom_object("example.com", "v1", NS, "scalers", "s")
    assert obj["spec"]["replicas"] == 5 and obj["metadata"]["generation"] == 2

    await ext.delete_custom_resource_definition("scalers.example.com")
    with pytest.raises(ApiException) as unserved:
        await custom.get_namespaced_custom_object("example.com", "v1", NS, "scalers", "s")
    assert unserved.value.status == 404
    assert devcluster.list_objects("scalers", group="example.com") == []


async def test_scale_write_without_resource_version_survives_a_concurrent_change(
    devcluster: DevCluster, api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kube-apiserver re-applies a scale write that names no resourceVersion when the object
    changed while the write was admitted (GuaranteedUpdate); one that names a stale
    resourceVersion gets 409."""
    _, custom = await with_scalers(api)
    made = await custom.create_namespaced_custom_object("example.com", "v1", NS, "scalers", scaler("c", 1))
    admit = devcluster.api.admit
    changed: list[str] = []

    async def admit_while_status_changes(phase: str, t: Any, *args: Any, **kwargs: Any) -> Any:
        if phase == "validating" and t.subresource == "scale" and not changed:
            changed.append("status")  # another writer (a controller's status write) wins the race
            status = [{"op": "add", "path": "/status", "value": {"replicas": 1}}]
            await custom.patch_namespaced_custom_object_status(
                "example.com", "v1", NS, "scalers", "c", status
            )
        return await admit(phase, t, *args, **kwargs)

    monkeypatch.setattr(devcluster.api, "admit", admit_while_status_changes)
    await custom.patch_namespaced_custom_object_scale(
        "example.com", "v1", NS, "scalers", "c", [{"op": "replace", "path": "/spec/replicas", "value": 4}]
    )
    obj = await custom.get_namespaced_custom_object("example.com", "v1", NS, "scalers", "c")
    assert changed and obj["spec"]["replicas"] == 4 and obj["status"] == {"replicas": 1}

    stale = {"metadata": {"name": "c", "resourceVersion": made["metadata"]["resourceVersion"]}}
    with pytest.raises(ApiException) as conflict:
        await custom.replace_namespaced_custom_object_scale(
            "example.com", "v1", NS, "scalers", "c", {**stale, "spec": {"replicas": 2}}
        )
    assert conflict.value.status == 409


# ---- admission ---------------------------------------------------------------------------------


@pytest.fixture
async def webhook(tmp_path: Any) -> AsyncIterator[tuple[str, bytes, list[dict[str, Any]]]]:
    """An HTTPS admission webhook: /mutate labels configmaps (and adds a field ConfigMaps do not
    have), /validate denies names starting with bad."""
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(bundle.serving.cert_pem)
    (tmp_path / "tls.key").write_bytes(bundle.serving.key_pem)
    seen: list[dict[str, Any]] = []

    async def mutate(request: web.Request) -> web.Response:
        review = await request.json()
        seen.append(review["request"])
        patch = [
            {"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}},
            {"op": "add", "path": "/bogus", "value": 1},  # not a ConfigMap field
        ]
        response = {
            "uid": review["request"]["uid"],
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
        }
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    async def validate(request: web.Request) -> web.Response:
        review = await request.json()
        seen.append(review["request"])
        name = review["request"]["name"]
        allowed = not name.startswith("bad")
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": allowed}
        if not allowed:
            response["status"] = {"code": 403, "message": f"{name} is a bad name"}
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    app = web.Application()
    app.router.add_post("/mutate", mutate)
    app.router.add_post("/validate", validate)
    runner = web.AppRunner(app)
    await runner.setup()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"https://127.0.0.1:{port}", bundle.ca.cert_pem, seen
    finally:
        await runner.cleanup()


def _config(kind: str, url: str, ca: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": kind.lower()},
        "webhooks": [
            {
                "name": f"{kind.lower()}.example.com",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": url, "caBundle": base64.b64encode(ca).decode()},
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["configmaps"],
                    }
                ],
            }
        ],
    }


async def test_webhooks_mutate_and_deny_in_the_write_path(
    devcluster: DevCluster, api: Any, webhook: tuple[str, bytes, list[dict[str, Any]]]
) -> None:
    url, ca, seen = webhook
    reg = client.AdmissionregistrationV1Api(api)
    await reg.create_mutating_webhook_configuration(
        _config("MutatingWebhookConfiguration", url + "/mutate", ca)
    )
    await reg.create_validating_webhook_configuration(
        _config("ValidatingWebhookConfiguration", url + "/validate", ca)
    )
    v1 = client.CoreV1Api(api)
    made = await v1.create_namespaced_config_map(NS, {"metadata": {"name": "good"}})
    assert made.metadata.labels == {"mutated": "yes"}
    # the patched object is decoded into the Go type without strictness (mutating
    # dispatcher.go): the unknown field is dropped silently, whatever fieldValidation says
    stored = devcluster.get_object("configmaps", NS, "good")
    assert stored is not None and "bogus" not in stored
    with pytest.raises(ApiException) as denied:
        await v1.create_namespaced_config_map(NS, {"metadata": {"name": "bad-one"}})
    body = json.loads(denied.value.body)
    assert denied.value.status == 403
    assert (
        body["message"] == 'admission webhook "validatingwebhookconfiguration.example.com" denied the '
        "request: bad-one is a bad name"
    )
    assert devcluster.get_object("configmaps", NS, "bad-one") is None

    seen.clear()
    await v1.create_namespaced_config_map(NS, {"metadata": {"name": "dry"}}, dry_run="All")
    assert [r["dryRun"] for r in seen] == [True, True]
    assert devcluster.get_object("configmaps", NS, "dry") is None


async def test_scale_writes_are_admitted_as_scales(
    devcluster: DevCluster, api: Any, webhook: tuple[str, bytes, list[dict[str, Any]]]
) -> None:
    """kube-apiserver admits a write to `{plural}/scale` with autoscaling/v1 Scales
    (apiextensions-apiserver customresource etcd.go toScaleUpdateValidation): kind Scale, the
    custom resource as `resource`, Scales as object and oldObject — what kubetrain's webhook reads
    the job for."""
    url, ca, seen = webhook
    _, custom = await with_scalers(api)
    await custom.create_namespaced_custom_object("example.com", "v1", NS, "scalers", scaler("w", 2))
    config = _config("ValidatingWebhookConfiguration", url + "/validate", ca)
    config["webhooks"][0]["rules"] = [
        {
            "apiGroups": ["example.com"],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["scalers/scale"],
        }
    ]
    await client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration(config)
    await custom.patch_namespaced_custom_object_scale(
        "example.com", "v1", NS, "scalers", "w", [{"op": "replace", "path": "/spec/replicas", "value": 5}]
    )
    (request,) = seen
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert request["requestKind"] == request["kind"]
    assert request["resource"] == {"group": "example.com", "version": "v1", "resource": "scalers"}
    assert request["subResource"] == "scale" and request["operation"] == "UPDATE"
    assert request["object"]["kind"] == "Scale" and request["object"]["spec"] == {"replicas": 5}
    assert request["oldObject"]["kind"] == "Scale" and request["oldObject"]["spec"] == {"replicas": 2}
    assert request["object"]["metadata"]["name"] == "w"
    # the resource's managers of the replicas path as the Scale's (ScaleHandler.ToSubresource); the
    # new Scale has none: its field manager failed on the custom resource's Scale
    (owner,) = request["oldObject"]["metadata"]["managedFields"]
    assert owner["apiVersion"] == "autoscaling/v1" and owner["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "managedFields" not in request["object"]["metadata"]
    obj = await custom.get_namespaced_custom_object("example.com", "v1", NS, "scalers", "w")
    assert obj["spec"]["replicas"] == 5


async def test_an_eviction_is_admitted_as_a_create_of_pods_eviction_not_as_a_delete(
    devcluster: DevCluster, api: Any, webhook: tuple[str, bytes, list[dict[str, Any]]]
) -> None:
    """kube-apiserver admits POST pods/{name}/eviction as a CREATE of the `eviction` subresource
    with a policy/v1 Eviction, and deletes the pod without admitting a DELETE (eviction.go
    `EvictionREST.Create`: `createValidation`, then `rest.ValidateAllObjectFunc`): a webhook
    that polices evictions must see them, one that polices pod deletions must not."""
    url, ca, seen = webhook
    config = _config("ValidatingWebhookConfiguration", url + "/validate", ca)
    config["webhooks"][0]["rules"] = [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/eviction"]},
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["pods"]},
    ]
    await client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration(config)
    v1 = client.CoreV1Api(api)
    for name in ("victim", "bad-victim"):
        await v1.create_namespaced_pod(NS, pod(name))

    def evict(name: str | None) -> Any:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
        return v1.create_namespaced_pod_eviction("victim" if name is None else name, NS, body)

    await evict("victim")
    (request,) = seen
    assert request["operation"] == "CREATE" and request["subResource"] == "eviction"
    assert request["kind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["name"] == "victim" and request["namespace"] == NS
    assert request["object"]["kind"] == "Eviction" and request["object"]["metadata"]["name"] == "victim"
    gone = devcluster.get_object("pods", NS, "victim")
    assert gone is None or gone["metadata"].get("deletionTimestamp")

    seen.clear()
    with pytest.raises(ApiException) as denied:
        await evict("bad-victim")
    assert denied.value.status == 403
    assert [r["subResource"] for r in seen] == ["eviction"]
    kept = devcluster.get_object("pods", NS, "bad-victim")
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
    conditions = (kept.get("status") or {}).get("conditions") or []
    assert not any(c["type"] == "DisruptionTarget" for c in conditions)

    # an Eviction must name its pod, as the URL does
    seen.clear()
    with pytest.raises(ApiException) as unnamed:
        await evict(None)
    assert unnamed.value.status == 400
    assert json.loads(unnamed.value.body)["message"] == "name in URL does not match name in Eviction object"
    assert seen == []

    # a plain DELETE is admitted as one
    with pytest.raises(ApiException) as refused:
        await v1.delete_namespaced_pod("bad-victim", NS)
    assert refused.value.status == 403
    assert [(r["operation"], r.get("subResource")) for r in seen] == [("DELETE", None)]


async def test_a_binding_is_admitted_as_a_create_of_pods_binding(
    devcluster: DevCluster, api: Any, webhook: tuple[str, bytes, list[dict[str, Any]]]
) -> None:
    """kube-apiserver admits POST pods/{name}/binding as a CREATE of the `binding` subresource with
    the v1 Binding: a denial leaves the pod unbound."""
    url, ca, seen = webhook
    config = _config("ValidatingWebhookConfiguration", url + "/validate", ca)
    config["webhooks"][0]["rules"] = [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/binding"]}
    ]
    await client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration(config)
    v1 = client.CoreV1Api(api)
    for name in ("placed", "bad-placed"):
        await v1.create_namespaced_pod(NS, pod(name))
        body = {"metadata": {"name": name}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
        await v1.create_namespaced_pod_binding(name, NS, body, _preload_content=False)
    placed, refused = seen
    assert placed["kind"] == {"group": "", "version": "v1", "kind": "Binding"}
    assert placed["operation"] == "CREATE" and placed["subResource"] == "binding"
    assert placed["object"]["target"]["name"] == "node-1" and placed["name"] == "placed"
    assert refused["name"] == "bad-placed"
    assert (await v1.read_namespaced_pod("placed", NS)).spec.node_name == "node-1"
    assert (await v1.read_namespaced_pod("bad-placed", NS)).spec.node_name is None
