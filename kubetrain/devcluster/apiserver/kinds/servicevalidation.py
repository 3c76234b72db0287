"""core/v1 Service validation as kube-apiserver does it (k8s.io/kubernetes pkg/apis/core/validation
`ValidateService`, `validateServicePort`, `ValidatePortNumOrName`; apimachinery
`unversionedvalidation.ValidateLabels` for the selector), with upstream's causes.

- `spec.ports` is required unless the service is headless (`clusterIP: None`) or ExternalName.
- A port's name is required when there is more than one port; set, it is a DNS-1123 label (not
  an IANA_SVC_NAME, unlike a container port's) and unique among the service's ports.
- `port` is 1-65535; `protocol` one of SCTP, TCP, UDP; `targetPort` (after defaulting to `port`)
  is a port number 1-65535 or a port name (`IsValidPortName`).
- `spec.clusterIP`, when set, is `None` or an IP address; not `None` for NodePort and LoadBalancer services.
- `spec.selector` keys are label keys (qualified names), values label values.
- `spec.type` is one of ClusterIP, ExternalName, LoadBalancer, NodePort.

Not validated: nodePorts, externalIPs, loadBalancer fields, session affinity config, IP families
and dual-stack policy, traffic policies, appProtocol, updates' clusterIP immutability.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.fielderrors import duplicate, invalid, not_supported, required
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    dns1123_label_errors,
    label_value_problems,
    qualified_name_problems,
)
from kubetrain.devcluster.apiserver.kinds.podvalidation import PORT_RANGE, port_name_problems, protocol_causes

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
IP_MESSAGE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def validate_service(svc: Obj) -> list[Cause]:
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    causes: list[Cause] = []
    kind = spec.get("type") or "ClusterIP"
    if kind not in SERVICE_TYPES:
        causes.append(not_supported("spec.type", kind, SERVICE_TYPES))
    headless = spec.get("clusterIP") == "None"
    ports: list[Any] = spec["ports"] if isinstance(spec.get("ports"), list) else []
    if not ports and not headless and kind != "ExternalName":
        causes.append(required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        causes += service_port_causes(port, f"spec.ports[{i}]", require_name=len(ports) > 1, names=names)
    causes += cluster_ip_causes(spec, kind)
    causes += selector_causes(spec.get("selector"))
    return causes


def service_port_causes(port: Any, path: str, *, require_name: bool, names: set[str]) -> list[Cause]:
    """`validateServicePort`."""
    if not isinstance(port, dict):
        return [Cause("FieldValueTypeInvalid", "Invalid value: must be an object", path)]
    causes: list[Cause] = []
    name = port.get("name")
    if require_name and not name:
        causes.append(required(f"{path}.name"))
    elif isinstance(name, str) and name:
        causes += [invalid(f"{path}.name", name, m) for m in dns1123_label_errors(name)]
        if name in names:
            causes.append(duplicate(f"{path}.name", name))
        names.add(name)
    number = port.get("port")
    if not isinstance(number, int) or not 1 <= number <= 65535:
        causes.append(invalid(f"{path}.port", number if isinstance(number, int) else 0, PORT_RANGE))
    causes += protocol_causes(port.get("protocol"), f"{path}.protocol")
    target = port.get("targetPort")
    if isinstance(target, int) and not 1 <= target <= 65535:
        causes.append(invalid(f"{path}.targetPort", target, PORT_RANGE))
    elif isinstance(target, str):
        causes += [invalid(f"{path}.targetPort", target, m) for m in port_name_problems(target)]
    return causes


def cluster_ip_causes(spec: dict[str, Any], kind: str) -> list[Cause]:
    """`validateServiceClusterIPsRelatedFields`, for the first cluster IP."""
    ip = spec.get("clusterIP")
    if not isinstance(ip, str) or not ip or kind == "ExternalName":
        return []
    if ip == "None":
        if kind in ("NodePort", "LoadBalancer"):  # ValidateService's switch on the type
            return [invalid("spec.clusterIPs[0]", ip, f"may not be set to 'None' for {kind} services")]
        return []
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        return [invalid("spec.clusterIPs[0]", ip, IP_MESSAGE)]
    return []


def selector_causes(selector: Any) -> list[Cause]:
    """apimachinery `ValidateLabels` at `spec.selector`: keys, then values."""
    if not isinstance(selector, dict):
        return []
    causes: list[Cause] = []
    for key, value in selector.items():
        causes += [invalid("spec.selector", key, p) for p in qualified_name_problems(key)]
        text = value if isinstance(value, str) else ""
        causes += [invalid("spec.selector", text, p) for p in label_value_problems(text)]
    return causes
