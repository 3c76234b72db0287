"""core/v1 kinds other than pods and Events, as kube-apiserver prints them (k8s.io/kubernetes
pkg/printers/internalversion/printers.go; each row function names the upstream one it follows)."""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.printers.common import (
    AGE,
    NAME,
    age,
    col,
    count,
    field,
    items,
    label_set,
    name,
    quantity,
)

NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
NODE_ROLE_LABEL = "kubernetes.io/role"

NODE_COLUMNS = [
    NAME,
    col("Status"),
    col("Roles"),
    AGE,
    col("Version"),
    col("Internal-IP", priority=1),
    col("External-IP", priority=1),
    col("OS-Image", priority=1),
    col("Kernel-Version", priority=1),
    col("Container-Runtime", priority=1),
]


def node_roles(labels: Any) -> list[str]:
    """`findNodeRoles`: the `<role>` of each `node-role.kubernetes.io/<role>` label and the value
    of a non-empty `kubernetes.io/role` label, sorted and without duplicates."""
    roles: set[str] = set()
    for key, value in (labels if isinstance(labels, dict) else {}).items():
        if key.startswith(NODE_ROLE_PREFIX):
            if role := key[len(NODE_ROLE_PREFIX) :]:
                roles.add(role)
        elif key == NODE_ROLE_LABEL and value:
            roles.add(str(value))
    return sorted(roles)


def _node_address(obj: Obj, kind: str) -> str:
    """`getNodeInternalIP` / `getNodeExternalIP`: the first address of that type, else `<none>`."""
    for address in items(field(obj, "status", "addresses")):
        if isinstance(address, dict) and address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def node_row(obj: Obj, now: datetime) -> list[Any]:
    """`printNode`: STATUS is `Ready`, or `NotReady` for a Ready condition that is not True
    (False or Unknown), or `Unknown` without one; `SchedulingDisabled` is appended for a cordoned
    node (`spec.unschedulable`)."""
    status: list[str] = []
    ready = [
        c
        for c in items(field(obj, "status", "conditions"))
        if isinstance(c, dict) and c.get("type") == "Ready"
    ]
    if ready:
        status.append("Ready" if ready[-1].get("status") == "True" else "NotReady")
    else:
        status.append("Unknown")
    if field(obj, "spec", "unschedulable") is True:
        status.append("SchedulingDisabled")
    info = field(obj, "status", "nodeInfo") or {}
    return [
        name(obj),
        ",".join(status),
        ",".join(node_roles(obj["metadata"].get("labels"))) or "<none>",
        age(obj, now),
        str(info.get("kubeletVersion") or ""),
        _node_address(obj, "InternalIP"),
        _node_address(obj, "ExternalIP"),
        str(info.get("osImage") or "<unknown>"),
        str(info.get("kernelVersion") or "<unknown>"),
        str(info.get("containerRuntimeVersion") or "<unknown>"),
    ]


SERVICE_COLUMNS = [
    NAME,
    col("Type"),
    col("Cluster-IP"),
    col("External-IP"),
    col("Port(s)"),
    AGE,
    col("Selector", priority=1),
]


def _load_balancer(obj: Obj) -> str:
    """`loadBalancerStatusStringer` (wide, so never clipped): the ingress IPs, else hostnames,
    sorted and without duplicates."""
    found: set[str] = set()
    for ingress in items(field(obj, "status", "loadBalancer", "ingress")):
        if isinstance(ingress, dict) and (ingress.get("ip") or ingress.get("hostname")):
            found.add(str(ingress.get("ip") or ingress.get("hostname")))
    return ",".join(sorted(found))


def service_external_ip(obj: Obj) -> str:
    """`getServiceExternalIP`: `spec.externalIPs` or `<none>` for ClusterIP and NodePort; the
    load balancer's addresses (then the external IPs) or `<pending>` for LoadBalancer; the
    external name for ExternalName; `<unknown>` for another type."""
    spec = obj.get("spec") or {}
    external = [str(ip) for ip in items(spec.get("externalIPs"))]
    kind = spec.get("type")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        lb = _load_balancer(obj)
        if external:
            return ",".join(([*lb.split(",")] if lb else []) + external)
        return lb or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def service_ports(ports: Any) -> str:
    """`makePortString`: `port/protocol`, or `port:nodePort/protocol` with a node port."""
    pieces = []
    for port in items(ports):
        if not isinstance(port, dict):
            continue
        node_port = port.get("nodePort")
        protocol = port.get("protocol", "")
        if isinstance(node_port, int) and node_port > 0:
            pieces.append(f"{port.get('port')}:{node_port}/{protocol}")
        else:
            pieces.append(f"{port.get('port')}/{protocol}")
    return ",".join(pieces)


def service_row(obj: Obj, now: datetime) -> list[Any]:
    """`printService`."""
    spec = obj.get("spec") or {}
    cluster_ips = items(spec.get("clusterIPs"))
    return [
        name(obj),
        str(spec.get("type") or ""),
        str(cluster_ips[0]) if cluster_ips else "<none>",
        service_external_ip(obj),
        service_ports(spec.get("ports")) or "<none>",
        age(obj, now),
        label_set(spec.get("selector")),
    ]


ENDPOINTS_COLUMNS = [NAME, col("Endpoints"), AGE]


def _host_port(ip: str, port: Any) -> str:
    """Go's `net.JoinHostPort`: an IPv6 address in brackets."""
    try:
        v6 = isinstance(ipaddress.ip_address(ip), ipaddress.IPv6Address)
    except ValueError:
        v6 = ":" in ip
    return f"[{ip}]:{port}" if v6 else f"{ip}:{port}"


def format_endpoints(obj: Obj) -> str:
    """`formatEndpoints` with every port: up to three `ip:port` (`ip` for a subset without ports),
    then ` + N more...`; `<none>` without subsets."""
    subsets = [s for s in items(obj.get("subsets")) if isinstance(s, dict)]
    if not subsets:
        return "<none>"
    shown: list[str] = []
    more, total = False, 0
    for subset in subsets:
        addresses = [a for a in items(subset.get("addresses")) if isinstance(a, dict)]
        ports: list[Obj | None] = [p for p in items(subset.get("ports")) if isinstance(p, dict)]
        for port in ports or [None]:
            total += len(addresses)
            for address in addresses:
                if len(shown) == 3:
                    more = True
                    break
                ip = str(address.get("ip", ""))
                shown.append(ip if port is None else _host_port(ip, port.get("port")))
    text = ",".join(shown)
    return f"{text} + {total - 3} more..." if more else text


def endpoints_row(obj: Obj, now: datetime) -> list[Any]:
    """`printEndpoints`."""
    return [name(obj), format_endpoints(obj), age(obj, now)]


NAMESPACE_COLUMNS = [NAME, col("Status"), AGE]


def namespace_row(obj: Obj, now: datetime) -> list[Any]:
    """`printNamespace`."""
    return [name(obj), str(field(obj, "status", "phase") or ""), age(obj, now)]


SECRET_COLUMNS = [NAME, col("Type"), col("Data"), AGE]


def secret_row(obj: Obj, now: datetime) -> list[Any]:
    """`printSecret`: DATA counts the keys of `data` (`stringData` is merged into it on write)."""
    return [name(obj), str(obj.get("type") or ""), count(obj.get("data")), age(obj, now)]


CONFIGMAP_COLUMNS = [NAME, col("Data"), AGE]


def configmap_row(obj: Obj, now: datetime) -> list[Any]:
    """`printConfigMap`: DATA counts the keys of `data` and `binaryData`."""
    return [name(obj), count(obj.get("data")) + count(obj.get("binaryData")), age(obj, now)]


SERVICEACCOUNT_COLUMNS = [NAME, col("Secrets"), AGE]


def serviceaccount_row(obj: Obj, now: datetime) -> list[Any]:
    """`printServiceAccount`: SECRETS counts `secrets`."""
    return [name(obj), count(obj.get("secrets")), age(obj, now)]


PVC_COLUMNS = [
    NAME,
    col("Status"),
    col("Volume"),
    col("Capacity"),
    col("Access Modes"),
    col("StorageClass"),
    col("VolumeAttributesClass"),
    AGE,
    col("VolumeMode", priority=1),
]

_ACCESS_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def access_modes(modes: Any) -> str:
    """core helper `GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order, once each."""
    given = set(items(modes))
    return ",".join(short for mode, short in _ACCESS_MODES if mode in given)


def pvc_storage_class(obj: Obj) -> str:
    """core helper `GetPersistentVolumeClaimClass`: the beta annotation first, then
    `spec.storageClassName`."""
    annotations = obj["metadata"].get("annotations") or {}
    if "volume.beta.kubernetes.io/storage-class" in annotations:
        return str(annotations["volume.beta.kubernetes.io/storage-class"])
    return str(field(obj, "spec", "storageClassName") or "")


def pvc_row(obj: Obj, now: datetime) -> list[Any]:
    """`printPersistentVolumeClaim`: `Terminating` once deleted; capacity and access modes only
    for a claim bound to a volume (`spec.volumeName`), from its status; `<unset>` for an unset
    volumeAttributesClassName or volumeMode."""
    spec = obj.get("spec") or {}
    phase = (
        "Terminating"
        if obj["metadata"].get("deletionTimestamp")
        else str(field(obj, "status", "phase") or "")
    )
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes(field(obj, "status", "accessModes"))
        capacity = quantity(field(obj, "status", "capacity", "storage") or "0")
    attributes = spec.get("volumeAttributesClassName")
    mode = spec.get("volumeMode")
    return [
        name(obj),
        phase,
        str(spec.get("volumeName") or ""),
        capacity,
        modes,
        pvc_storage_class(obj),
        "<unset>" if attributes is None else str(attributes),
        age(obj, now),
        "<unset>" if mode is None else str(mode),
    ]


RESOURCEQUOTA_COLUMNS = [NAME, AGE, col("Request"), col("Limit")]


def resourcequota_row(obj: Obj, now: datetime) -> list[Any]:
    """`printResourceQuota`: `<resource>: <used>/<hard>` for each resource of status.hard (sorted
    by name), those named `limits.…` under LIMIT, the others under REQUEST."""
    status = obj.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    request: list[str] = []
    limit: list[str] = []
    for resource in sorted(hard):
        pieces = resource.split(".")
        column = limit if len(pieces) > 1 and pieces[0] == "limits" else request
        now_used = quantity(used[resource]) if resource in used else "0"
        column.append(f"{resource}: {now_used}/{quantity(hard[resource])}")
    return [name(obj), age(obj, now), ", ".join(request), ", ".join(limit)]
