"""The simulated kubelets' heartbeats: every `HEARTBEAT_SECONDS` each running node's Lease is
renewed (`nodes.renew_lease`), then the node lifecycle controller's health monitor
(`controllers/nodehealth.py`, when the simulator runs the node controllers) looks at every Node.

A stopped node's kubelet (`stop`) renews nothing, so the monitor marks it Unknown after the grace
period; `start` brings the kubelet back: it posts the node's status (Ready, a new heartbeat) and
renews its Lease at once, as a restarted kubelet registers again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.controllers.nodehealth import NodeHealthMonitor
from kubetrain.devcluster.kubelet.nodes import register_nodes, renew_lease
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0


class Heartbeats:
    def __init__(
        self, api: Callable[[], RawApi], clock: Clock, host_ips: dict[str, str], monitor: bool
    ) -> None:
        self._api, self.clock, self._host_ips = api, clock, host_ips
        self.stopped: set[str] = set()  # nodes whose kubelet is stopped
        self.monitor = NodeHealthMonitor(api, clock) if monitor else None

    async def loop(self, after_each: Callable[[], None]) -> None:
        while True:
            for name in self._host_ips:
                if name in self.stopped:
                    continue
                try:
                    await renew_lease(self._api(), name, self.clock.now())
                except (TimeoutError, ApiError, OSError) as exc:
                    log.debug("node lease %s not renewed: %s", name, exc)
            if self.monitor is not None:
                try:
                    await self.monitor.check()
                except (TimeoutError, ApiError, OSError) as exc:
                    log.debug("node health not checked: %s", exc)
            after_each()
            await self.clock.sleep(HEARTBEAT_SECONDS)

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
