"""Service cluster IPs and node ports as kube-apiserver allocates them (k8s.io/kubernetes
pkg/registry/core/service/storage alloc.go; pkg/apis/core/validation ValidateServiceUpdate) and
the `default/kubernetes` Service every cluster has, checked through a plain client. The values
are read back from the cluster (its service CIDR is its own), so these hold on a real
kube-apiserver with the default node port range; where devcluster disagrees, it is wrong.
"""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

from e2e.conformance_support import Obj, assert_status


def service(name: str, **spec: Any) -> Obj:
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def causes(body: Obj) -> list[tuple[str, str, str]]:
    assert_status(body, 422, "Invalid")
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_every_cluster_has_the_kubernetes_service(kube: Any) -> None:
    svc = await kube.ok("GET", "/api/v1/namespaces/default/services/kubernetes")
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert svc["spec"]["type"] == "ClusterIP" and "selector" not in svc["spec"]
    (port,) = svc["spec"]["ports"]
    assert (port["name"], port["port"], port["protocol"]) == ("https", 443, "TCP")
    first = ipaddress.ip_address(svc["spec"]["clusterIP"])
    assert int(first) & 0xFF == 1  # the first address of the service range
    slices = await kube.ok(
        "GET",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        query={"labelSelector": "kubernetes.io/service-name=kubernetes"},
    )
    assert [s["metadata"]["name"] for s in slices["items"]] == ["kubernetes"]
    (endpoint_port,) = slices["items"][0]["ports"]
    assert (endpoint_port["name"], endpoint_port["port"]) == ("https", port["targetPort"])


async def test_a_taken_cluster_ip_is_refused(kube: Any, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/services"
    first = await kube.ok("POST", path, service("first"))
    ip = first["spec"]["clusterIP"]
    assert first["spec"]["clusterIPs"] == [ip]
    refused = await kube.request("POST", path, service("second", clusterIP=ip))
    assert causes(refused.body) == [
        (
            "FieldValueInvalid",
            "spec.clusterIPs",
            f'Invalid value: ["{ip}"]: failed to allocate IP {ip}: provided IP is already allocated',
        )
    ]


async def test_a_cluster_ip_may_not_change(kube: Any, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/services"
    made = await kube.ok("POST", path, service("web"))
    moved = copy.deepcopy(made)
    ip = ipaddress.ip_address(made["spec"]["clusterIP"])
    new_ip = str(ip + 1 if int(ip) & 0xFF < 200 else ip - 1)
    moved["spec"]["clusterIP"] = new_ip
    moved["spec"]["clusterIPs"] = [new_ip]
    refused = await kube.request("PUT", f"{path}/web", moved)
    assert causes(refused.body) == [
        (
            "FieldValueInvalid",
            "spec.clusterIPs[0]",
            f'Invalid value: ["{new_ip}"]: may not change once set',
        )
    ]


async def test_node_ports_are_allocated_once(kube: Any, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/services"
    made = await kube.ok("POST", path, service("np", type="NodePort"))
    node_port = made["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    taken = await kube.request(
        "POST", path, service("np2", type="NodePort", ports=[{"port": 80, "nodePort": node_port}])
    )
    assert causes(taken.body) == [
        (
            "FieldValueInvalid",
            "spec.ports[0].nodePort",
            f"Invalid value: {node_port}: provided port is already allocated",
        )
    ]
    low = await kube.request(
        "POST", path, service("np3", type="NodePort", ports=[{"port": 80, "nodePort": 80}])
    )
    assert causes(low.body) == [
        (
            "FieldValueInvalid",
            "spec.ports[0].nodePort",
            "Invalid value: 80: provided port is not in the valid range. "
            "The range of valid ports is 30000-32767",
        )
    ]
    # a Service that switches to ClusterIP gives its node port back
    back = copy.deepcopy(made)
    back["spec"]["type"] = "ClusterIP"
    updated = await kube.ok("PUT", f"{path}/np", back)
    assert "nodePort" not in updated["spec"]["ports"][0]
    again = await kube.ok(
        "POST", path, service("np4", type="NodePort", ports=[{"port": 80, "nodePort": node_port}])
    )
    assert again["spec"]["ports"][0]["nodePort"] == node_port


async def test_load_balancers_may_go_without_node_ports(kube: Any, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/services"
    lb = await kube.ok("POST", path, service("lb", type="LoadBalancer", allocateLoadBalancerNodePorts=False))
    assert lb["spec"]["allocateLoadBalancerNodePorts"] is False
    assert "nodePort" not in lb["spec"]["ports"][0]
    assert lb["spec"]["clusterIP"] == lb["spec"]["clusterIPs"][0]
