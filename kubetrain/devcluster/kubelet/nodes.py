"""The simulated kubelet's nodes: registration (Node objects marked Ready) and Lease heartbeats."""

from __future__ import annotations

from datetime import datetime

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.kubelet import nodeobjects

LEASE_NAMESPACE = "kube-node-lease"


async def register_nodes(api: RawApi, host_ips: dict[str, str], now: datetime) -> None:
    """Create each Node (name -> InternalIP) if absent and mark it Ready through `nodes/status`."""
    for name, address in host_ips.items():
        code, node = await api.request("GET", f"/api/v1/nodes/{name}")
        if code == 404:
            code, node = await api.request(
                "POST", "/api/v1/nodes", body=nodeobjects.node_object(name, address, now)
            )
            if code not in (200, 201, 409):
                raise ApiError(code, node)
            code, node = await api.request("GET", f"/api/v1/nodes/{name}")
        if code != 200:
            raise ApiError(code, node)
        node["status"] = nodeobjects.node_status(name, address, now)
        code, body = await api.request("PUT", f"/api/v1/nodes/{name}/status", body=node)
        if code not in (200, 409):
            raise ApiError(code, body)


async def renew_lease(api: RawApi, node: str, now: datetime) -> str | None:
    """The node heartbeat: create or renew the node's Lease in kube-node-lease. The `renewTime`
    written, or None when the Lease was not written (the next heartbeat tries again)."""
    renew = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
    code, lease = await api.request("GET", f"{path}/{node}")
    if code == 404:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": node, "namespace": LEASE_NAMESPACE},
            "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": renew},
        }
        code, _ = await api.request("POST", path, body=lease)
    elif code == 200:
        lease.setdefault("spec", {})["renewTime"] = renew
        code, _ = await api.request("PUT", f"{path}/{node}", body=lease)
    return renew if code in (200, 201) else None
