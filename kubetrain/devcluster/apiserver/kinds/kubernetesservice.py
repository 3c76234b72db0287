"""The `default/kubernetes` Service and its Endpoints and EndpointSlice, which kube-apiserver
itself keeps (k8s.io/kubernetes pkg/controlplane/controller/kubernetesservice `Controller.Run`
every `EndpointInterval`, 10 s; `CreateOrUpdateMasterServiceIfNeeded`; the endpoint reconciler
pkg/controlplane/reconcilers and its `EndpointsAdapter`, which writes the EndpointSlice).

- Service `kubernetes` in `default`: labels `component: apiserver`, `provider: kubernetes`; type
  ClusterIP with the first address of the service range (`10.96.0.1`); one port `https`,
  443/TCP, whose targetPort is the API server's own port; no selector. Created when missing;
  its ports and type are put back when someone changes them (`reconcile` true, as kube-apiserver
  runs it).
- Endpoints `kubernetes` (label `endpointslice.kubernetes.io/skip-mirror: "true"`): one subset,
  the API server's address and port `https`. EndpointSlice `kubernetes` (label
  `kubernetes.io/service-name: kubernetes`, addressType IPv4): that address, ready, and the port.
  Both are created when missing and put back when they differ.

`writes` decides one pass (pure); DevCluster (endpoints/server.py) runs it at start and every
10 s. Nothing is written when all three are as they should be, so watchers see no events
from it; a write that meets a changed or deleted object is left to the next pass. If another Service holds
the first address when `kubernetes` has to be re-created, it is not (as upstream's create then
fails) until that address is free.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.serviceranges import IPRange

NAME, NAMESPACE = "kubernetes", "default"
SERVICE_PORT = 443  # --kubernetes-service-port... the Service's port, not the API server's
INTERVAL = 10.0  # kubernetesservice.Config.EndpointInterval
SERVICES_KEY, ENDPOINTS_KEY, SLICES_KEY = "services", "endpoints", "endpointslices.discovery.k8s.io"
SERVICE_LABELS = {"provider": "kubernetes", "component": "apiserver"}
SKIP_MIRROR = {"endpointslice.kubernetes.io/skip-mirror": "true"}


def service(cluster_ip: str, port: int) -> Obj:
    """The Service as `CreateOrUpdateMasterServiceIfNeeded` creates it, with the v1 defaults."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": dict(SERVICE_LABELS)},
        "spec": {
            "ports": [{"name": "https", "port": SERVICE_PORT, "protocol": "TCP", "targetPort": port}],
            "clusterIP": cluster_ip,
            "clusterIPs": [cluster_ip],
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        },
        "status": {"loadBalancer": {}},
    }


def endpoints(address: str, port: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": dict(SKIP_MIRROR)},
        "subsets": [
            {"addresses": [{"ip": address}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}
        ],
    }


def endpoint_slice(address: str, port: int) -> Obj:
    """`endpointSliceFromEndpoints` of `endpoints(address, port)`."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"kubernetes.io/service-name": NAME}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }


def _service_differs(current: Obj, port: int) -> bool:
    """`getMasterServiceUpdateIfNeeded` → `checkServiceFormat`: the ports or the type changed."""
    spec = current.get("spec") or {}
    want = service("", port)["spec"]
    return bool(spec.get("ports") != want["ports"] or spec.get("type") != want["type"])


Current = dict[str, Obj | None]  # resource key -> the stored `default/kubernetes` object, if any


def writes(
    current: Current, ip_taken: bool, address: str, port: int, ips: IPRange | None = None
) -> list[tuple[str, Obj, bool]]:
    """One pass of the controller and the endpoint reconciler over `current`: (resource key,
    object, True for a create / False for an update of that stored version) for what is missing
    or was changed; nothing for an object being deleted. `ip_taken`: another Service holds the
    first address (the Service is then not re-created)."""
    cluster_ip = (ips or IPRange()).first_ip()
    out: list[tuple[str, Obj, bool]] = []
    svc = current.get(SERVICES_KEY)
    if svc is None:
        if not ip_taken:
            out.append((SERVICES_KEY, service(cluster_ip, port), True))
    elif _service_differs(svc, port) and not svc["metadata"].get("deletionTimestamp"):
        fixed = copy.deepcopy(svc)
        fixed["spec"]["ports"] = service(cluster_ip, port)["spec"]["ports"]
        fixed["spec"]["type"] = "ClusterIP"
        out.append((SERVICES_KEY, fixed, False))
    for key, want in ((ENDPOINTS_KEY, endpoints(address, port)), (SLICES_KEY, endpoint_slice(address, port))):
        obj = current.get(key)
        if obj is None:
            out.append((key, want, True))
            continue
        if obj["metadata"].get("deletionTimestamp"):
            continue
        fixed = {**copy.deepcopy(obj), **{k: v for k, v in want.items() if k != "metadata"}}
        fixed["metadata"]["labels"] = {**(obj["metadata"].get("labels") or {}), **want["metadata"]["labels"]}
        if _content(fixed) != _content(obj):
            out.append((key, fixed, False))
    return out


def _content(obj: Obj) -> Any:
    return (
        {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")},
        obj["metadata"].get("labels") or {},
    )
