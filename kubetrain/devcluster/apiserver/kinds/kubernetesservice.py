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

`ensure` does one pass; DevCluster runs it at start and every 10 s. Nothing is written when
all three are as they should be, so watchers see no events from it. If another Service holds
the first address when `kubernetes` has to be re-created, it is not (as upstream's create then
fails) until that address is free.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import meta
from kubetrain.devcluster.apiserver.kinds.resources import Registry
from kubetrain.devcluster.apiserver.kinds.serviceranges import IPRange
from kubetrain.devcluster.apiserver.storage.store import Store

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


def _ip_taken(store: Store, ip: str) -> bool:
    return any(ip in ((svc.get("spec") or {}).get("clusterIPs") or []) for svc in store.items(SERVICES_KEY))


def ensure(
    store: Store, registry: Registry, clock: Any, address: str, port: int, ips: IPRange | None = None
) -> None:
    """One pass of the controller and the endpoint reconciler: create what is missing, restore
    what was changed (not while the default namespace is gone or going)."""
    ns = store.get("namespaces", "", NAMESPACE)
    if ns is None or ns["metadata"].get("deletionTimestamp"):
        return
    cluster_ip = (ips or IPRange()).first_ip()
    current = store.get(SERVICES_KEY, NAMESPACE, NAME)
    if current is None:
        if not _ip_taken(store, cluster_ip):
            _create(store, registry, clock, SERVICES_KEY, service(cluster_ip, port))
    elif _service_differs(current, port) and not current["metadata"].get("deletionTimestamp"):
        fixed = copy.deepcopy(current)
        fixed["spec"]["ports"] = service(cluster_ip, port)["spec"]["ports"]
        fixed["spec"]["type"] = "ClusterIP"
        _update(store, SERVICES_KEY, fixed)
    for key, want in ((ENDPOINTS_KEY, endpoints(address, port)), (SLICES_KEY, endpoint_slice(address, port))):
        current = store.get(key, NAMESPACE, NAME)
        if current is None:
            _create(store, registry, clock, key, want)
        elif not current["metadata"].get("deletionTimestamp") and _content(current) != _content(want):
            fixed = {**copy.deepcopy(current), **{k: v for k, v in want.items() if k != "metadata"}}
            fixed["metadata"]["labels"] = {
                **(current["metadata"].get("labels") or {}),
                **want["metadata"]["labels"],
            }
            if _content(fixed) != _content(current):
                _update(store, key, fixed)


def _content(obj: Obj) -> Any:
    return (
        {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")},
        {k: v for k, v in (obj["metadata"].get("labels") or {}).items()},
    )


def _create(store: Store, registry: Registry, clock: Any, key: str, obj: Obj) -> None:
    rt = registry.by_key(key)
    assert rt is not None
    meta.prepare_create(obj, rt, NAMESPACE, clock())
    with contextlib.suppress(KeyError):  # created meanwhile: the next pass looks at it
        store.create(key, obj)


def _update(store: Store, key: str, obj: Obj) -> None:
    with contextlib.suppress(LookupError, ValueError):  # changed or gone meanwhile: next pass
        store.update(key, obj, obj["metadata"]["resourceVersion"])
