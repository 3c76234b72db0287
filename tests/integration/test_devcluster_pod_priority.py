"""devcluster's Priority admission on a pod create, as kube-apiserver's Priority plugin
(plugin/pkg/admission/priority admission.go `admitPod`): without a PriorityClass and without a
globalDefault one (devcluster serves none) the priority is 0, and a pod giving another in
`spec.priority` is 403 Forbidden; the system classes give their values."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.client import RawApi

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


async def test_a_priority_without_its_class_is_forbidden(raw: RawApi) -> None:
    code, body = await raw.request("POST", PODS, body=pod("p100", priority=100))
    assert code == 403, body
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods "p100" is forbidden: the integer value of priority (100) must not be provided in pod '
        "spec; priority admission controller computed 0 from the given PriorityClass name"
    )
    code, body = await raw.request("POST", PODS, body=pod("p0", priority=0))
    assert code == 201, body
    code, body = await raw.request("POST", PODS, body=pod("none"))
    assert code == 201 and body["spec"]["priority"] == 0, body


async def test_the_system_classes_give_their_values(raw: RawApi) -> None:
    code, body = await raw.request("POST", PODS, body=pod("crit", priorityClassName="system-node-critical"))
    assert code == 201 and body["spec"]["priority"] == 2000001000, body
    code, body = await raw.request(
        "POST", PODS, body=pod("crit-0", priorityClassName="system-cluster-critical", priority=0)
    )
    assert code == 403, body
    assert "computed 2000000000 from the given PriorityClass name" in body["message"]
