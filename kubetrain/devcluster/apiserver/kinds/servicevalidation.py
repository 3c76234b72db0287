"""core/v1 Service validation as kube-apiserver does it (k8s.io/kubernetes pkg/apis/core/validation
`ValidateService`, `validateServicePort`, `ValidatePortNumOrName`; apimachinery
`unversionedvalidation.ValidateLabels` for the selector), with upstream's causes.

- `spec.ports` is required unless the service is headless (`clusterIP: None`) or ExternalName.
- A port's name is required when there is more than one port; set, it is a DNS-1123 label (not
  an IANA_SVC_NAME, unlike a container port's) and unique among the service's ports.
- `port` is 1-65535; `protocol` one of SCTP, TCP, UDP; `targetPort` (after defaulting to `port`)
  is a port number 1-65535 or a port name (`IsValidPortName`).
- `spec.clusterIP` and `spec.clusterIPs[0]` agree; each cluster IP is `None` (first and only)
  or an IP address, at most two; `spec.ipFamilies` IPv4/IPv6 without repeats and
  `spec.ipFamilyPolicy` one of PreferDualStack, RequireDualStack, SingleStack
  (`ValidateServiceClusterIPsRelatedFields`, also run before allocation: servicealloc.py);
  not `None` for NodePort and LoadBalancer services.
- `spec.ports[*].nodePort` is not set on a ClusterIP service, and no two ports have the same
  protocol and node port. Whether a node port is in range and free is the allocator's.
- `spec.selector` keys are label keys (qualified names), values label values.
- `spec.type` is one of ClusterIP, ExternalName, LoadBalancer, NodePort.
- On update (`ValidateServiceUpdate` → `validateUpgradeDowngradeClusterIPs`) the cluster IPs may
  not change once set (`spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once
  set`), nor the primary one be unset, unless the service is or was ExternalName.

Not validated: externalIPs, loadBalancer fields, session affinity config, dual-stack
upgrades and downgrades, traffic policies, appProtocol.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.fielderrors import (
    Go,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    PORT_RANGE,
    dns1123_label_errors,
    label_value_problems,
    port_name_problems,
    qualified_name_problems,
)
from kubetrain.devcluster.apiserver.kinds.portvalidation import protocol_causes

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
IP_MESSAGE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
IP_FAMILIES = ("IPv4", "IPv6")
IP_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
CLUSTER_IPS = "spec.clusterIPs"


def validate_service(svc: Obj, old: Obj | None = None) -> list[Cause]:
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    causes: list[Cause] = []
    if old is not None:
        causes += update_cluster_ip_causes(spec, old.get("spec") or {})
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
    causes += node_port_causes(kind, ports)
    return causes


def node_port_causes(kind: str, ports: list[Any]) -> list[Cause]:
    """`ValidateService`: no node port on a ClusterIP service; (protocol, nodePort) unique."""
    causes: list[Cause] = []
    seen: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        number = port.get("nodePort") if isinstance(port, dict) else None
        if not number:
            continue
        path = f"spec.ports[{i}].nodePort"
        if kind == "ClusterIP":
            causes.append(forbidden(path, "may not be used when `type` is 'ClusterIP'"))
        key = (port.get("protocol"), number)
        if key in seen:
            causes.append(duplicate(path, number))
        seen.add(key)
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


def json_value(value: Any) -> Go:
    """A bad value that is no string, number or bool, as apimachinery's `ErrorBody` prints it
    since 1.34: its JSON (`["10.96.0.10"]`; a nil list `null`)."""
    return Go(json.dumps(value or None, separators=(",", ":"), ensure_ascii=False))


def cluster_ip_causes(spec: dict[str, Any], kind: str) -> list[Cause]:
    """`ValidateServiceClusterIPsRelatedFields`, then `None` refused for NodePort and
    LoadBalancer services (`ValidateService`'s switch on the type)."""
    if kind == "ExternalName":
        return []
    causes = cluster_ips_related_causes(spec)
    if spec.get("clusterIP") == "None" and kind in ("NodePort", "LoadBalancer"):
        causes.append(invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {kind} services"))
    return causes


def _is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def cluster_ips_related_causes(spec: dict[str, Any]) -> list[Cause]:
    """`ValidateServiceClusterIPsRelatedFields` (ExternalName services are not checked)."""
    if spec.get("type") == "ExternalName":
        return []
    causes: list[Cause] = []
    ip = spec.get("clusterIP") or ""
    ips: list[Any] = spec["clusterIPs"] if isinstance(spec.get("clusterIPs"), list) else []
    if ip:
        if not ips:
            causes.append(required(CLUSTER_IPS))
        elif ips[0] != ip:
            causes.append(invalid(CLUSTER_IPS, json_value(ips), "first value must match `clusterIP`"))
    elif ips:
        causes.append(
            invalid(CLUSTER_IPS, json_value(ips), "must be empty when `clusterIP` is not specified")
        )
    seen: set[Any] = set()
    for i, family in enumerate(spec.get("ipFamilies") or []):
        if family not in IP_FAMILIES:
            causes.append(not_supported(f"spec.ipFamilies[{i}]", family, IP_FAMILIES))
        if family in seen:
            causes.append(duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        causes.append(not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    bad_ip = False
    for i, value in enumerate(ips):
        if i == 0 and value == "None":
            if len(ips) > 1:
                bad_ip = True
                causes.append(
                    invalid(CLUSTER_IPS, json_value(ips), "'None' must be the first and only value")
                )
            continue
        if not isinstance(value, str) or not _is_ip(value):
            bad_ip = True
            causes.append(invalid(f"{CLUSTER_IPS}[{i}]", value, IP_MESSAGE))
    if len(ips) > 2:
        causes.append(invalid(CLUSTER_IPS, json_value(ips), "may only hold up to 2 values"))
    if bad_ip:
        return causes
    if len(ips) > 1 and len({ipaddress.ip_address(v).version for v in ips}) != len(ips):
        causes.append(
            invalid(CLUSTER_IPS, json_value(ips), "may specify no more than one IP for each IP family")
        )
    families = spec.get("ipFamilies") or []
    if ips and ips[0] != "None":
        for i, value in enumerate(ips[: len(families)]):
            v6 = ipaddress.ip_address(value).version == 6
            expected = "IPv6" if families[i] == "IPv6" else "IPv4"
            if families[i] in IP_FAMILIES and v6 != (expected == "IPv6"):
                message = f"expected an {expected} value as indicated by `ipFamilies[{i}]`"
                causes.append(invalid(f"{CLUSTER_IPS}[{i}]", value, message))
    return causes


def update_cluster_ip_causes(spec: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """`validateUpgradeDowngradeClusterIPs`: the cluster IPs a service got stay its own."""
    if "ExternalName" in (spec.get("type"), old.get("type")):
        return []
    ips: list[Any] = list(spec.get("clusterIPs") or [])
    old_ips: list[Any] = list(old.get("clusterIPs") or [])
    if ips == ["None"] and old_ips == ["None"]:
        return []
    changed = "may not change once set"
    if len(ips) == len(old_ips):
        return [
            invalid(f"{CLUSTER_IPS}[{i}]", json_value(ips), changed)
            for i, ip in enumerate(old_ips)
            if ip != ips[i]
        ]
    if len(old_ips) > len(ips):
        causes = (
            []
            if ips
            else [invalid(f"{CLUSTER_IPS}[0]", json_value(ips), "primary clusterIP can not be unset")]
        )
        if ips and ips[0] != old_ips[0]:
            causes.append(invalid(f"{CLUSTER_IPS}[0]", json_value(ips), changed))
        if len(ips) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
            detail = "must be set to 'SingleStack' when releasing the secondary clusterIP"
            causes.append(invalid("spec.ipFamilyPolicy", spec.get("ipFamilyPolicy"), detail))
        return causes
    if old_ips and ips[0] != old_ips[0]:
        return [invalid(f"{CLUSTER_IPS}[0]", json_value(ips), changed)]
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
