"""The node lifecycle controller's health monitor (k8s.io/kubernetes pkg/controller/nodelifecycle
node_lifecycle_controller.go `monitorNodeHealth` / `tryUpdateNodeHealth`): a node whose kubelet has
neither renewed its Lease in `kube-node-lease` nor posted a new Ready heartbeat for
`NODE_MONITOR_GRACE_PERIOD` seconds gets its Ready, MemoryPressure, DiskPressure and PIDPressure
conditions set to Unknown (NetworkUnavailable is left alone, as upstream).

- `observe` (pure): the probe time is the controller's own clock when it first sees the node,
  when the Ready condition's `lastHeartbeatTime` changes, or when the Lease's `renewTime` is later
  than the one it saw before — never the kubelet's timestamps themselves (`nodeHealthData`).
- `unknown_conditions` (pure): past the grace period, a condition that is not Unknown becomes
  Unknown, reason `NodeStatusUnknown`, message `Kubelet stopped posting node status.`, its
  `lastHeartbeatTime` kept and `lastTransitionTime` now; a missing one is added with reason
  `NodeStatusNeverUpdated`, message `Kubelet never posted node status.`, `lastHeartbeatTime` the
  node's creationTimestamp. A node with no Ready condition yet gets `NODE_STARTUP_GRACE_PERIOD`.
- `NodeHealthMonitor.check` reads the Nodes and Leases and PUTs `nodes/status` for each node
  whose conditions changed (a conflict waits for the next check). The nodelifecycle taints then
  follow from the Unknown Ready condition (`node.kubernetes.io/unreachable`).

Defaults: `--node-monitor-grace-period` is 50 s since Kubernetes 1.32 (it was 40 s; raised so a
kubelet gets its retries in, kubernetes/kubernetes#121793), `--node-startup-grace-period` 60 s.
Upstream checks every `--node-monitor-period` (5 s); the pod simulator calls `check` at each of
its node heartbeats (10 s), right after renewing its running nodes' Leases, so a node goes
Unknown between 50 and 60 s after its last renewal on the simulator's clock.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

NODE_MONITOR_GRACE_PERIOD = 50.0
NODE_STARTUP_GRACE_PERIOD = 60.0
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
MONITORED = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


@dataclass(frozen=True)
class Health:
    """What the controller last saw of a node (`nodeHealthData`)."""

    probe: float  # the controller's monotonic time of the last sign of life
    heartbeat: str | None  # the Ready condition's lastHeartbeatTime seen
    renew: str | None  # the Lease's renewTime seen


def _ready(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"), None)


def _later(a: str, b: str) -> bool:
    """`a` is after `b` (RFC 3339 UTC timestamps, fractions of a second allowed)."""

    def parse(s: str) -> datetime:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(UTC)

    try:
        return parse(a) > parse(b)
    except ValueError:
        return a != b


def observe(saved: Health | None, node: Mapping[str, Any], renew: str | None, now: float) -> Health:
    ready = _ready(node)
    heartbeat = None if ready is None else str(ready.get("lastHeartbeatTime") or "")
    if saved is None or heartbeat != saved.heartbeat:
        saved = Health(now, heartbeat, saved.renew if saved else None)
    if renew and (saved.renew is None or _later(renew, saved.renew)):
        saved = Health(now, saved.heartbeat, renew)
    return saved


def unknown_conditions(
    node: Mapping[str, Any], health: Health, now: float, wall: datetime
) -> list[dict[str, Any]] | None:
    """The node's conditions marked Unknown once its grace period has passed; None when nothing
    changes."""
    grace = NODE_STARTUP_GRACE_PERIOD if _ready(node) is None else NODE_MONITOR_GRACE_PERIOD
    if not now > health.probe + grace:
        return None
    stamp = wall.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    items = (node.get("status") or {}).get("conditions") or []
    conditions = [dict(c) for c in items if isinstance(c, Mapping)]
    changed = False
    for kind in MONITORED:
        current = next((c for c in conditions if c.get("type") == kind), None)
        if current is None:
            created = (node.get("metadata") or {}).get("creationTimestamp")
            conditions.append(
                {
                    "type": kind,
                    "status": "Unknown",
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                    "lastHeartbeatTime": created,
                    "lastTransitionTime": stamp,
                }
            )
            changed = True
        elif current.get("status") != "Unknown":
            current.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
                lastTransitionTime=stamp,
            )
            changed = True
    return conditions if changed else None


class NodeHealthMonitor:
    def __init__(self, api: Callable[[], RawApi], clock: Clock) -> None:
        self._api = api
        self.clock = clock
        self._health: dict[str, Health] = {}
        self.passes = 0  # checks completed (tests wait for the next one)

    async def check(self) -> None:
        """One `monitorNodeHealth` pass over every Node."""
        api = self._api()
        code, nodes = await api.request("GET", "/api/v1/nodes")
        if code != 200:
            raise ApiError(code, nodes)
        code, leases = await api.request("GET", LEASES)
        if code != 200:
            raise ApiError(code, leases)
        renewed = {
            str(lease["metadata"]["name"]): str((lease.get("spec") or {}).get("renewTime") or "")
            for lease in leases.get("items") or []
        }
        now, names = self.clock.monotonic(), set()
        for node in nodes.get("items") or []:
            name = str(node["metadata"]["name"])
            names.add(name)
            health = self._health[name] = observe(self._health.get(name), node, renewed.get(name), now)
            conditions = unknown_conditions(node, health, now, self.clock.now())
            if conditions is None:
                continue
            updated = copy.deepcopy(node)
            updated.setdefault("status", {})["conditions"] = conditions
            code, body = await api.request("PUT", f"/api/v1/nodes/{name}/status", body=updated)
            if code == 200:  # our own write keeps the heartbeat: it is no sign of life
                ready = _ready(body)
                heartbeat = None if ready is None else str(ready.get("lastHeartbeatTime") or "")
                self._health[name] = Health(health.probe, heartbeat, health.renew)
            elif code not in (404, 409):
                log.warning("node %s: Unknown conditions not written: %s", name, ApiError(code, body))
        for gone in set(self._health) - names:
            del self._health[gone]
        self.passes += 1
