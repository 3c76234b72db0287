"""The simulated kubelets' heartbeats: every `HEARTBEAT_SECONDS` each running node's Lease is
renewed (`nodes.renew_lease`), then the node lifecycle controller's health monitor
(`controllers/nodehealth.py`, when the simulator runs the node controllers) looks at every Node
of its caches: the Node cache fed by the simulator's shared Node watch, the Lease cache by a
watch of kube-node-lease that `loop` runs. A pass waits (at most 2 s) for both caches' first list,
there is none without it (the renewals go on), and then (at most 2 s) until the Lease cache shows
the renewals just made.

A stopped node's kubelet (`stop`) renews nothing, so the monitor marks it Unknown after the grace
period; `start` brings the kubelet back: it posts the node's status (Ready, a new heartbeat) and
renews its Lease at once, as a restarted kubelet registers again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kubetrain.devcluster.apiserver.base.background import cancel_all
from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.controllers.nodehealth import NodeHealthMonitor
from kubetrain.devcluster.kubelet.nodes import register_nodes, renew_lease
from kubetrain.devcluster.sharedwatch import SharedWatch
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0


class Heartbeats:
    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        host_ips: dict[str, str],
        node_watch: SharedWatch | None,
    ) -> None:
        """`node_watch`: the shared watch of every Node that feeds the health monitor's Node
        cache (subscribed to here, run by its owner); None runs no health monitor."""
        self._api, self.clock, self._host_ips = api, clock, host_ips
        self.stopped: set[str] = set()  # nodes whose kubelet is stopped
        self.monitor = NodeHealthMonitor(api, clock, node_watch) if node_watch is not None else None

    async def loop(self, after_each: Callable[[], None]) -> None:
        monitor = self.monitor
        leases = asyncio.ensure_future(monitor.watch_leases()) if monitor is not None else None
        try:
            while True:
                written = await self._renew()
                if monitor is not None:
                    try:
                        await monitor.check(written)
                    except (TimeoutError, ApiError, OSError) as exc:
                        log.debug("node health not checked: %s", exc)
                after_each()
                await self.clock.sleep(HEARTBEAT_SECONDS)
        finally:
            if leases is not None:
                await cancel_all([leases])

    async def _renew(self) -> dict[str, str]:
        """Renew the Lease of every running node; the renewTimes written, by node."""
        written: dict[str, str] = {}
        for name in self._host_ips:
            if name in self.stopped:
                continue
            try:
                renew = await renew_lease(self._api(), name, self.clock.now())
            except (TimeoutError, ApiError, OSError) as exc:
                log.debug("node lease %s not renewed: %s", name, exc)
                continue
            if renew is not None:
                written[name] = renew
        return written

    def stop(self, name: str) -> None:
        if name not in self._host_ips:
            raise ValueError(f"node {name!r} is not a simulated node; valid: {', '.join(self._host_ips)}")
        self.stopped.add(name)

    async def start(self, name: str) -> None:
        if name not in self._host_ips:
            raise ValueError(f"node {name!r} is not a simulated node; valid: {', '.join(self._host_ips)}")
        self.stopped.discard(name)
        await register_nodes(self._api(), {name: self._host_ips[name]}, self.clock.now())
        await renew_lease(self._api(), name, self.clock.now())
