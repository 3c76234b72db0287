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
- `NodeHealthMonitor.check` reads its caches, as upstream reads its Node and Lease informers (no
  LIST, no GET): the Nodes of a shared watch of every Node (the pod simulator's) and the Leases
  of its own watch of kube-node-lease (`watch_leases`); it PUTs `nodes/status` for each node
  whose conditions changed (a conflict, e.g. from a cached Node older than the API's, waits for
  the next check). A check waits at most `CATCH_UP_SECONDS` for both caches' first list (without
  it there is no pass) and, given the renewals just made (`written`), as long until the Lease
  cache shows them; past that it goes on without them.
  The nodelifecycle taints then follow from the Unknown Ready condition
  (`node.kubernetes.io/unreachable`).

Defaults: `--node-monitor-grace-period` is 50 s since Kubernetes 1.32 (it was 40 s; raised so a
kubelet gets its retries in, kubernetes/kubernetes#121793), `--node-startup-grace-period` 60 s.
Upstream checks every `--node-monitor-period` (5 s); the pod simulator calls `check` at each of
its node heartbeats (10 s), right after renewing its running nodes' Leases, so a node goes
Unknown between 50 and 60 s after its last renewal on the simulator's clock.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.sharedwatch import SharedWatch
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

NODE_MONITOR_GRACE_PERIOD = 50.0
NODE_STARTUP_GRACE_PERIOD = 60.0
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
CATCH_UP_SECONDS = 2.0  # longest wait of a pass for the Lease renewals just made
MONITORED = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


@dataclass(frozen=True)
class Health:
    """What the controller last saw of a node (`nodeHealthData`)."""

    probe: float  # the controller's monotonic time of the last sign of life
    heartbeat: str | None  # the Ready condition's lastHeartbeatTime seen
    renew: str | None  # the Lease's renewTime seen


def _renew_time(lease: Mapping[str, Any]) -> str:
    return str((lease.get("spec") or {}).get("renewTime") or "")


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
    """`monitorNodeHealth` over watch-fed caches of the Nodes (`nodes`, a shared watch of every
    Node) and the Leases of kube-node-lease (`lease_watch`, run by `watch_leases`)."""

    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        nodes: SharedWatch,
        *,
        catch_up_seconds: float = CATCH_UP_SECONDS,
    ) -> None:
        if nodes.path != "/api/v1/nodes":
            raise ValueError(f"the node health monitor needs a watch of every Node, not {nodes.path}")
        self._api = api
        self.clock = clock
        self.catch_up_seconds = catch_up_seconds
        self._health: dict[str, Health] = {}
        self.nodes: dict[str, dict[str, Any]] = {}  # the Node cache, by name
        self.renewed: dict[str, str] = {}  # the Lease cache: node name -> renewTime
        self.nodes_synced = asyncio.Event()
        self.leases_synced = asyncio.Event()
        self.lease_watch = SharedWatch(LEASES)
        self._lease_changed = asyncio.Condition()
        nodes.subscribe(self.observe_node, self.relist_nodes)
        self.lease_watch.subscribe(self.observe_lease, self.relist_leases)
        self.passes = 0  # checks completed (tests wait for the next one)

    # ---- the caches (what upstream's informers hold) -------------------------------------------
    async def relist_nodes(self, items: list[dict[str, Any]]) -> None:
        self.nodes = {str(n["metadata"]["name"]): n for n in items}
        self.nodes_synced.set()

    async def observe_node(self, kind: str, node: dict[str, Any]) -> None:
        if kind == "DELETED":
            self.nodes.pop(str(node["metadata"]["name"]), None)
        elif kind in ("ADDED", "MODIFIED"):
            self.nodes[str(node["metadata"]["name"])] = node

    async def relist_leases(self, items: list[dict[str, Any]]) -> None:
        async with self._lease_changed:
            self.renewed = {str(lease["metadata"]["name"]): _renew_time(lease) for lease in items}
            self.leases_synced.set()
            self._lease_changed.notify_all()

    async def observe_lease(self, kind: str, lease: dict[str, Any]) -> None:
        async with self._lease_changed:
            if kind == "DELETED":
                self.renewed.pop(str(lease["metadata"]["name"]), None)
            elif kind in ("ADDED", "MODIFIED"):
                self.renewed[str(lease["metadata"]["name"])] = _renew_time(lease)
            self._lease_changed.notify_all()

    async def watch_leases(self) -> None:
        """List and watch the Leases of kube-node-lease into the cache until cancelled."""
        await self.lease_watch.run(self._api())

    async def synced(self, seconds: float) -> bool:
        """Whether both caches hold their first list, waiting at most `seconds` for them
        (`WaitForNamedCacheSync`)."""
        try:
            async with asyncio.timeout(seconds):
                await self.nodes_synced.wait()
                await self.leases_synced.wait()
        except TimeoutError:
            return False
        return True

    async def _catch_up(self, written: Mapping[str, str]) -> None:
        """Wait (at most `catch_up_seconds`) until the Lease cache shows these renewals, or later
        ones: the simulated kubelets renew just before a pass, and a pass that missed them would
        see a node's last sign of life one heartbeat late."""

        def seen() -> bool:
            return all(
                name in self.renewed and not _later(renew, self.renewed[name])
                for name, renew in written.items()
            )

        try:
            async with asyncio.timeout(self.catch_up_seconds), self._lease_changed:
                await self._lease_changed.wait_for(seen)
        except TimeoutError:
            log.debug("node health pass without the latest Lease renewals of %s", ", ".join(written))

    async def check(self, written: Mapping[str, str] | None = None) -> None:
        """One `monitorNodeHealth` pass over every cached Node. `written`: the Lease renewals
        (node name -> renewTime) made just before it, which the pass waits to see. Until the
        caches hold their first list (waited for `catch_up_seconds`), there is no pass."""
        if not await self.synced(self.catch_up_seconds):
            log.debug("no node health pass: the Node and Lease caches hold no list yet")
            return
        if written:
            await self._catch_up(written)
        api = self._api()
        now, names = self.clock.monotonic(), set()
        for node in list(self.nodes.values()):
            name = str(node["metadata"]["name"])
            names.add(name)
            health = self._health[name] = observe(self._health.get(name), node, self.renewed.get(name), now)
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
