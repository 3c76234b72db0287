"""What the EndpointSlice and Endpoints controllers of kube-controller-manager want for one
Service (pure; `endpointslices.py` feeds and writes it).

Upstream: staging k8s.io/endpointslice utils.go (`podToEndpoint`, `getEndpointPorts`,
`ShouldPodBeInEndpoints`, `ShouldSetHostname`), reconciler.go (`Reconciler.reconcile`,
`reconcileByAddressType`), k8s.io/kubernetes pkg/controller/endpointslice utils.go
(`setEndpointSliceLabels`, `ownerRef`) and pkg/controller/endpoint endpoints_controller.go
(`syncService`, `addEndpointSubset`) with pkg/api/v1/endpoints `RepackSubsets`.

- An ExternalName Service gets no slices (`Controller.syncService`).
- A pod is an endpoint when it is not terminal (Succeeded/Failed) and has an IP; the slices
  keep terminating pods (`ShouldPodBeInEndpoints(pod, true)`), Endpoints only with
  `publishNotReadyAddresses` (`ShouldPodBeInEndpoints(pod, publishNotReadyAddresses)`).
- Conditions (`podToEndpoint`): serving = the pod's Ready condition is True; terminating = the
  pod has a deletionTimestamp; ready = publishNotReadyAddresses or (serving and not terminating).
- hostname: the pod's spec.hostname when its spec.subdomain is the Service's name (headless DNS).
- Ports (`getEndpointPorts`): each Service port whose targetPort resolves on the pod — a number
  as is, a name against the pod's container ports of that name and protocol (`podutil.FindPort`);
  a port that does not resolve is left out for that pod. Pods are grouped by their resolved
  ports; each group fills slices of at most `MAX_ENDPOINTS_PER_SLICE` (100) endpoints.
- Reconcile: an existing slice whose ports equal a group's is reused (updated only when its
  content differs), surplus ones are deleted, missing ones created with generateName
  `<service>-`. Upstream packs more cleverly (it keeps endpoints in the slice they were in to
  spare writes); devcluster re-packs by pod name, which gives the same set of endpoints.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj

MAX_ENDPOINTS_PER_SLICE = 100  # --max-endpoints-per-slice default
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"
ZONE_LABEL = "topology.kubernetes.io/zone"

Ports = tuple[tuple[str, int, str, str | None], ...]  # (name, port, protocol, appProtocol)


def selector_of(svc: Obj) -> dict[str, str] | None:
    """The Service's selector; None when it has none (such Services are left alone)."""
    sel = (svc.get("spec") or {}).get("selector")
    if not isinstance(sel, dict) or not sel:
        return None
    return {str(k): str(v) for k, v in sel.items()}


def is_pod_ready(pod: Obj) -> bool:
    """pkg/api/v1/pod `IsPodReady`."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def pod_ip(pod: Obj) -> str:
    status = pod.get("status") or {}
    ip = status.get("podIP")
    if ip:
        return str(ip)
    for entry in status.get("podIPs") or []:
        if isinstance(entry, dict) and entry.get("ip") and ":" not in str(entry["ip"]):
            return str(entry["ip"])
    return ""


def should_be_in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """`ShouldPodBeInEndpoints`."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    if not pod_ip(pod):
        return False
    return include_terminating or not pod["metadata"].get("deletionTimestamp")


def should_set_hostname(pod: Obj, svc: Obj) -> bool:
    """`ShouldSetHostname`: the pod names this Service as its subdomain."""
    spec = pod.get("spec") or {}
    return bool(
        spec.get("hostname")
        and spec.get("subdomain") == svc["metadata"]["name"]
        and pod["metadata"].get("namespace") == svc["metadata"].get("namespace")
    )


def find_port(pod: Obj, svc_port: Obj) -> int | None:
    """pkg/api/v1/pod `FindPort`: the targetPort (the port when unset) on this pod, or None."""
    target = svc_port.get("targetPort", svc_port.get("port"))
    protocol = svc_port.get("protocol", "TCP")
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    spec = pod.get("spec") or {}
    for container in spec.get("containers") or []:
        for port in (container or {}).get("ports") or []:
            if port.get("name") == target and port.get("protocol", "TCP") == protocol:
                value = port.get("containerPort")
                return value if isinstance(value, int) else None
    return None


def endpoint_ports(svc: Obj, pod: Obj) -> Ports:
    """`getEndpointPorts`: the Service's ports resolved on this pod, in the Service's order."""
    out = []
    for sp in (svc.get("spec") or {}).get("ports") or []:
        number = find_port(pod, sp)
        if number is None:
            continue
        out.append((str(sp.get("name") or ""), number, str(sp.get("protocol", "TCP")), sp.get("appProtocol")))
    return tuple(out)


def _ports_json(ports: Ports) -> list[Obj]:
    out = []
    for name, number, protocol, app in ports:
        port: Obj = {"name": name, "port": number, "protocol": protocol}
        if app is not None:
            port["appProtocol"] = app
        out.append(port)
    return out


def pod_to_endpoint(pod: Obj, svc: Obj, nodes: dict[str, Obj]) -> Obj:
    """`podToEndpoint`."""
    md = pod["metadata"]
    spec = pod.get("spec") or {}
    serving = is_pod_ready(pod)
    terminating = bool(md.get("deletionTimestamp"))
    ready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses")) or (serving and not terminating)
    ep: Obj = {
        "addresses": [pod_ip(pod)],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
    }
    if should_set_hostname(pod, svc):
        ep["hostname"] = spec["hostname"]
    ep["targetRef"] = {
        "kind": "Pod",
        "namespace": md.get("namespace", ""),
        "name": md["name"],
        "uid": md.get("uid", ""),
    }
    node_name = spec.get("nodeName")
    if node_name:
        ep["nodeName"] = node_name
        zone = ((nodes.get(str(node_name)) or {}).get("metadata", {}).get("labels") or {}).get(ZONE_LABEL)
        if zone:
            ep["zone"] = zone
    return ep


def slice_labels(svc: Obj) -> dict[str, str]:
    """`setEndpointSliceLabels`: the Service's labels, plus the headless, service-name and
    managed-by labels."""
    labels = {
        k: v
        for k, v in (svc["metadata"].get("labels") or {}).items()
        if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL)
    }
    if (svc.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = svc["metadata"]["name"]
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    return labels


def owner_ref(svc: Obj) -> Obj:
    """`ownerRef`: the Service, as controller."""
    md = svc["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "name": md["name"],
        "uid": md["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _headless_without_ports(svc: Obj) -> bool:
    spec = svc.get("spec") or {}
    return not spec.get("ports") and spec.get("clusterIP") == "None"


Memo = dict[tuple[str, str, str], Any]  # (pod uid, pod resourceVersion, what) -> an entry


def _memoized(memo: Memo | None, pod: Obj, what: str, compute: Callable[[], Any]) -> Any:
    """`compute()` for this version of the pod, from `memo` when it has it (the caller keeps one
    memo per version of the Service)."""
    md = pod["metadata"]
    rv = md.get("resourceVersion")
    if memo is None or not rv:
        return compute()
    key = (str(md.get("uid", "")), str(rv), what)
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _slice_entry(svc: Obj, pod: Obj, nodes: dict[str, Obj]) -> tuple[Ports, Obj] | None:
    if not should_be_in_endpoints(pod, include_terminating=True):
        return None
    ports = () if _headless_without_ports(svc) else endpoint_ports(svc, pod)
    return ports, pod_to_endpoint(pod, svc, nodes)


def desired_groups(
    svc: Obj, pods: list[Obj], nodes: dict[str, Obj], memo: Memo | None = None
) -> dict[Ports, list[Obj]]:
    """The endpoints by resolved port set, each list in pod-name order."""
    groups: dict[Ports, list[Obj]] = {}
    for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
        entry = _memoized(memo, pod, "slice", functools.partial(_slice_entry, svc, pod, nodes))
        if entry is not None:
            groups.setdefault(entry[0], []).append(entry[1])
    return groups


@dataclass
class SlicePlan:
    creates: list[Obj] = field(default_factory=list)  # new slices (generateName set)
    updates: list[Obj] = field(default_factory=list)  # changed copies of existing slices
    deletes: list[Obj] = field(default_factory=list)  # existing slices to delete


def _slice_ports(sl: Obj) -> Ports:
    return tuple(
        (
            str(p.get("name") or ""),
            int(p.get("port") or 0),
            str(p.get("protocol", "TCP")),
            p.get("appProtocol"),
        )
        for p in sl.get("ports") or []
    )


def plan_slices(
    svc: Obj, existing: list[Obj], pods: list[Obj], nodes: dict[str, Obj], memo: Memo | None = None
) -> SlicePlan:
    """`Reconciler.reconcile` for the IPv4 address type: what to create, update and delete so
    that `existing` (this Service's controller-managed slices) list `pods`' endpoints."""
    out = SlicePlan()
    if (svc.get("spec") or {}).get("type") == "ExternalName":
        # `Controller.syncService`: an ExternalName Service gets no endpoints (issue 105986)
        out.deletes = [s for s in existing if not s["metadata"].get("deletionTimestamp")]
        return out
    groups = desired_groups(svc, pods, nodes, memo)
    if not groups:
        groups = {(): []}  # the placeholder slice upstream keeps for a Service without endpoints
    labels = slice_labels(svc)
    reusable: dict[Ports, list[Obj]] = {}
    for sl in sorted(existing, key=lambda s: str(s["metadata"]["name"])):
        if sl["metadata"].get("deletionTimestamp"):
            continue
        if sl.get("addressType") != "IPv4":
            out.deletes.append(sl)
            continue
        reusable.setdefault(_slice_ports(sl), []).append(sl)
    for ports, endpoints in groups.items():
        chunks = [
            endpoints[i : i + MAX_ENDPOINTS_PER_SLICE]
            for i in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE)
        ]
        for chunk in chunks or [[]]:
            body = {"addressType": "IPv4", "endpoints": chunk, "ports": _ports_json(ports)}
            olds = reusable.get(ports)
            if olds:
                old = olds.pop(0)
                # a new object sharing the old one's unchanged parts (stored objects are not mutated)
                md = {**old["metadata"], "labels": dict(labels), "ownerReferences": [owner_ref(svc)]}
                new = {**old, **body, "metadata": md}
                if _content(new) != _content(old):
                    out.updates.append(new)
                continue
            out.creates.append(
                {
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "generateName": svc["metadata"]["name"] + "-",
                        "labels": dict(labels),
                        "ownerReferences": [owner_ref(svc)],
                    },
                    **body,
                }
            )
    for olds in reusable.values():
        out.deletes.extend(olds)
    return out


def _content(obj: Obj) -> Any:
    md = obj["metadata"]
    return (obj.get("endpoints"), obj.get("ports"), md.get("labels"), md.get("ownerReferences"))


def _endpoints_entry(svc: Obj, pod: Obj) -> tuple[Ports, str, Obj] | None:
    """The pod's address in the Endpoints: (ports, `addresses` or `notReadyAddresses`, address)."""
    spec = svc.get("spec") or {}
    tolerate = bool(spec.get("publishNotReadyAddresses"))
    if not should_be_in_endpoints(pod, include_terminating=tolerate):
        return None
    md = pod["metadata"]
    addr: Obj = {"ip": pod_ip(pod)}
    if should_set_hostname(pod, svc):
        addr["hostname"] = pod["spec"]["hostname"]
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:
        addr["nodeName"] = node_name
    addr["targetRef"] = {
        "kind": "Pod",
        "namespace": md.get("namespace", ""),
        "name": md["name"],
        "uid": md.get("uid", ""),
    }
    if spec.get("ports"):
        ports = endpoint_ports(svc, pod)
        if not ports:
            return None
    elif spec.get("clusterIP") == "None":
        ports = ()
    else:
        return None
    return ports, "addresses" if tolerate or is_pod_ready(pod) else "notReadyAddresses", addr


def desired_endpoints(svc: Obj, pods: list[Obj], memo: Memo | None = None) -> Obj:
    """The Endpoints object of `syncService` (without resourceVersion and system metadata):
    a ready pod's address (any pod's with publishNotReadyAddresses) under `addresses`, another's
    under `notReadyAddresses`, repacked by port set (`RepackSubsets`; devcluster orders
    subsets by first pod name and addresses by IP rather than by hash)."""
    spec = svc.get("spec") or {}
    subsets: dict[Ports, dict[str, list[Obj]]] = {}
    for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
        entry = _memoized(memo, pod, "endpoints", functools.partial(_endpoints_entry, svc, pod))
        if entry is not None:
            ports, which, addr = entry
            subsets.setdefault(ports, {}).setdefault(which, []).append(addr)
    out_subsets = []
    for ports, addrs in subsets.items():
        subset: Obj = {}
        for which in ("addresses", "notReadyAddresses"):
            if addrs.get(which):
                subset[which] = sorted(addrs[which], key=lambda a: str(a["ip"]))
        if ports:
            subset["ports"] = [
                {k: v for k, v in p.items() if k != "appProtocol" or v} for p in _ports_json(ports)
            ]
        out_subsets.append(subset)
    labels = {k: v for k, v in (svc["metadata"].get("labels") or {}).items() if k != HEADLESS_LABEL}
    if spec.get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    ep: Obj = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": svc["metadata"]["name"], "namespace": svc["metadata"].get("namespace", "")},
    }
    if labels:
        ep["metadata"]["labels"] = labels
    if out_subsets:
        ep["subsets"] = out_subsets
    return ep


def endpoints_differ(current: Obj, want: Obj) -> bool:
    return bool(
        (current.get("subsets") or []) != (want.get("subsets") or [])
        or (current["metadata"].get("labels") or {}) != (want["metadata"].get("labels") or {})
    )
