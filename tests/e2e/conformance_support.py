"""Helpers shared by the conformance modules (tests/e2e/test_conformance*.py): the Gadget custom
resource (with status and scale subresources), ConfigMap builders, paths and Status assertions.
Fixtures (`kube`, `namespace`, `conformance_cluster`) are in conftest.py."""

from __future__ import annotations

import asyncio
from typing import Any

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"

GROUP = "conformance.kubetrain.io"
PLURAL = "gadgets"
CRD_NAME = f"{PLURAL}.{GROUP}"
CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.size",
                        "statusReplicasPath": ".status.ready",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "ready": {"type": "integer"},
                                    "selector": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> Obj:
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def cms(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/configmaps"


def gadgets(ns: str) -> str:
    return f"/apis/{GROUP}/v1/namespaces/{ns}/{PLURAL}"


def gadget(name: str, size: Any = 1, **spec: Any) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"size": size, **spec},
    }


async def install_crd(kube: Any, crd: Obj = CRD) -> None:
    """Create `crd` (the Gadget CRD unless given; one already there is kept) and wait until it
    is Established and its group's first version is served."""
    resp = await kube.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert resp.status in (201, 409), resp
    name, spec = crd["metadata"]["name"], crd["spec"]
    served = f"/apis/{spec['group']}/{spec['versions'][0]['name']}"
    async with asyncio.timeout(30):
        while True:
            made = await kube.ok("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conditions = {c["type"]: c["status"] for c in made.get("status", {}).get("conditions", [])}
            if conditions.get("Established") == "True" and (await kube.request("GET", served)).status == 200:
                return
            await asyncio.sleep(0.2)


def assert_status(body: Obj, code: int, reason: str) -> None:
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body["reason"] == reason
    assert isinstance(body["message"], str) and body["message"]


def causes(body: Obj) -> list[tuple[str, str]]:
    """(reason, field) of each cause of a 422 Invalid Status."""
    return [(c["reason"], c["field"]) for c in body["details"]["causes"]]


def owner_ref(owner: Obj, *, controller: bool = False, block: bool = False) -> Obj:
    """An ownerReference to the ConfigMap `owner` (as returned by the server)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": block,
    }
