"""devcluster binds a pod as kube-apiserver's `BindingREST.Create` and `setPodNodeAndMetadata`
do (pkg/registry/core/pod/storage/storage.go): under the Binding's uid precondition (a pod
deleted and recreated under the same name is not bound for the old one), never a gated pod,
the Binding's annotations merged into the pod's, and `PodScheduled` True from the moment of the
binding; and its webhooks see a CREATE of `pods/binding`."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.endpoints.server import DevCluster
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def devcluster_options(wall: FakeClock) -> dict[str, Any]:
    return {"clock": wall.now}


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec},
    }


def binding(name: str, node: str = "node-1", **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, **metadata},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


async def create(raw: RawApi, body: dict[str, Any]) -> dict[str, Any]:
    code, made = await raw.request("POST", PODS, body=body)
    assert code == 201, made
    return dict(made)


async def test_a_binding_takes_the_pods_uid_as_a_precondition(raw: RawApi) -> None:
    old = await create(raw, pod("p"))
    code, body = await raw.request("DELETE", f"{PODS}/p", query={"gracePeriodSeconds": "0"})
    assert code == 200, body
    new = await create(raw, pod("p"))
    stale = binding("p", uid=old["metadata"]["uid"])
    code, body = await raw.request("POST", f"{PODS}/p/binding", body=stale)
    assert code == 409, body
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "p": StorageError: invalid object, Code: 4, '
        "Key: /registry/pods/default/p, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
        f"UID in precondition: {old['metadata']['uid']}, UID in object meta: {new['metadata']['uid']}"
    )
    code, body = await raw.request("GET", f"{PODS}/p")
    assert "nodeName" not in body["spec"]
    code, body = await raw.request("POST", f"{PODS}/p/binding", body=binding("p", uid=new["metadata"]["uid"]))
    assert code == 201, body
    code, body = await raw.request("GET", f"{PODS}/p")
    assert body["spec"]["nodeName"] == "node-1"


async def test_a_gated_pod_is_not_bound(raw: RawApi) -> None:
    await create(raw, pod("g", schedulingGates=[{"name": "example.com/wait"}]))
    code, body = await raw.request("POST", f"{PODS}/g/binding", body=binding("g"))
    assert code == 409, body
    assert body["message"] == (
        'Operation cannot be fulfilled on pods/binding "g": pod g has non-empty .spec.schedulingGates'
    )
    assert body["details"]["kind"] == "pods/binding"
    code, body = await raw.request("GET", f"{PODS}/g")
    assert "nodeName" not in body["spec"]


async def test_the_binding_must_name_the_pod(raw: RawApi) -> None:
    await create(raw, pod("n"))
    code, body = await raw.request("POST", f"{PODS}/n/binding", body=binding("other"))
    assert code == 400, body
    assert body["message"] == "name in URL does not match name in Binding object"


async def test_scheduled_from_the_binding_with_its_annotations(
    raw: RawApi, wall: FakeClock, devcluster: DevCluster
) -> None:
    """PodScheduled turns True when the pod is bound (podutil.UpdatePodCondition), not when it
    was created: a pod that waited for a node is not "scheduled long ago" (what a start deadline
    counts from)."""
    made = await create(raw, pod("w", nodeSelector={"pool": "gpu"}))
    made["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/1 nodes are available",
                "lastProbeTime": None,
                "lastTransitionTime": made["metadata"]["creationTimestamp"],
            }
        ],
    }
    code, body = await raw.request("PUT", f"{PODS}/w/status", body=made)
    assert code == 200, body
    await wall.advance(600)
    code, body = await raw.request(
        "POST", f"{PODS}/w/binding", body=binding("w", annotations={"example.com/placed-by": "test"})
    )
    assert code == 201, body
    code, bound = await raw.request("GET", f"{PODS}/w")
    (scheduled,) = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled["status"] == "True" and "reason" not in scheduled and "message" not in scheduled
    assert scheduled["lastTransitionTime"] == wall.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    assert scheduled["lastTransitionTime"] != made["metadata"]["creationTimestamp"]
    assert bound["metadata"]["annotations"] == {"example.com/placed-by": "test"}
