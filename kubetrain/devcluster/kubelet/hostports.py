"""kube-scheduler's NodePorts Filter plugin — pure.

plugins/nodeports `Filter`, framework `HostPortInfo.CheckConflict`: the host ports a pod's
containers claim (`ports[].hostPort` > 0, with `hostIP` — empty is 0.0.0.0 — and `protocol` —
empty is TCP) conflict with those of the pods on a node when the protocol and port are the same
and either address is 0.0.0.0 or both are the same. Reason `node(s) didn't have free ports for
the requested pod ports` (Unschedulable: evicting pods may help).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

REASON = "node(s) didn't have free ports for the requested pod ports"
ALL = "0.0.0.0"

Port = tuple[str, str, int]  # (hostIP, protocol, hostPort)


def host_ports(pod: Mapping[str, Any]) -> list[Port]:
    """The host ports the pod's containers claim (nodeports `getContainerPorts`)."""
    out = []
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in (container.get("ports") or ()) if isinstance(container, Mapping) else ():
            number = port.get("hostPort") if isinstance(port, Mapping) else None
            if isinstance(number, int) and not isinstance(number, bool) and number > 0:
                out.append((str(port.get("hostIP") or ALL), str(port.get("protocol") or "TCP"), number))
    return out


def conflicts(wanted: Iterable[Port], used: Iterable[Port]) -> bool:
    taken = list(used)
    for ip, protocol, number in wanted:
        for other_ip, other_protocol, other_number in taken:
            same = (other_protocol, other_number) == (protocol, number)
            if same and (ALL in (ip, other_ip) or ip == other_ip):
                return True
    return False
