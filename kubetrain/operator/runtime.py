"""The controller as a process component: client, leader election, health and metrics wiring.

`ControllerRuntime` is what `kubetrain controller`, `kubetrain run` and `kubetrain dev` start:

    runtime = ControllerRuntime(args)        # the flags of kubetrain.commands._flags
    await runtime.start(health)              # registers the "controller" readiness check
    ...
    await runtime.stop()

With leader election on, every replica waits for the Lease and only the leader runs informers
and workers; losing the Lease stops them (another replica takes over). Readiness does not depend
on leadership: a standby replica is ready (it still serves webhooks in `kubetrain run`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os

from kubetrain.api import podtemplate
from kubetrain.kube.client import KubeClient
from kubetrain.kube.leader import LeaderElector, default_identity
from kubetrain.kube.transport import USER_AGENT
from kubetrain.operator.apigroups import check_api_groups
from kubetrain.operator.controller import Controller, ControllerConfig
from kubetrain.operator.crons import CronController, CronControllerConfig
from kubetrain.operator.progressenv import ProgressInjection
from kubetrain.serving.health import HealthServer

log = logging.getLogger(__name__)


class ControllerRuntime:
    """`lease_duration`/`renew_deadline`/`retry_period` (seconds) and `identity` tune leader
    election (client-go's defaults 15/10/2; tests use short ones). With leader election on, the
    User-Agent carries the identity, so an API server's audit log tells the replicas apart."""

    def __init__(
        self,
        args: argparse.Namespace,
        *,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self.args = args
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.client: KubeClient | None = None
        self.controller: Controller | None = None
        self.crons: CronController | None = None
        self.elector: LeaderElector | None = None
        self._elector_task: asyncio.Task[None] | None = None
        self.lost_leadership = asyncio.Event()
        self.progress: ProgressInjection | None = None  # set before start (commands/_progress.py)

    def _config(self) -> ControllerConfig:
        return ControllerConfig(
            namespaces=list(self.args.namespaces or []),
            workers=self.args.workers,
            gang_scheduler=self.args.gang_scheduler,
            scheduler_name=self.args.scheduler_name,
            max_replicas=self.args.max_replicas_per_job,
            service_mode=self.args.service_mode,
            cluster_domain=self.args.cluster_domain,
            api_groups=tuple(self.args.api_groups),
            progress=self.progress,
        )

    async def start(self, health: HealthServer | None = None) -> None:
        self.client = await KubeClient.connect(self.args.kubeconfig, qps=self.args.qps, burst=self.args.burst)
        await self.client.wait_reachable()  # ApiUnreachable: exit with one line, not retry forever
        # The pod template validator is built once, here, not on the first job's create path.
        warming = asyncio.ensure_future(asyncio.to_thread(podtemplate.warm))
        config = self._config()
        await check_api_groups(self.client, config.api_groups)  # ApiGroupRefused: not ours to serve
        self.controller = Controller(self.client, config)
        self.crons = CronController(
            self.client,
            CronControllerConfig(api_groups=config.api_groups, namespaces=config.namespaces),
        )
        await self.crons.check()  # ApiGroupRefused: apps.kubedl.io asked for, not ours to serve
        await warming
        if health is not None:
            health.add_readiness_check("controller", self.ready)
        if not self.args.leader_elect:
            await self.controller.start()
            await self.crons.start()
            return
        namespace = self.args.leader_election_namespace or os.environ.get("POD_NAMESPACE") or "default"
        self.client.user_agent = f"{USER_AGENT} ({self.identity})"
        self.elector = LeaderElector(
            self.client,
            namespace=namespace,
            name=self.args.leader_election_id,
            identity=self.identity,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            on_started_leading=self._lead,
            on_stopped_leading=self.lost_leadership.set,
        )
        self._elector_task = asyncio.create_task(self.elector.run(), name="leader election")

    async def _lead(self) -> None:
        assert self.controller is not None and self.crons is not None
        await self.controller.start()
        try:
            await self.crons.start()
            await asyncio.Event().wait()  # lead until cancelled (leadership lost or stopping)
        finally:
            await self.crons.stop()
            await self.controller.stop()

    def ready(self) -> bool:
        """Ready when the caches are synced, or when standing by for the Lease."""
        if self.controller is None:
            return False
        if self.elector is not None and not self.elector.is_leader:
            return True
        return self.controller.synced and (self.crons is None or self.crons.started)

    async def stop(self) -> None:
        if self.elector is not None:
            self.elector.stop()
        if self._elector_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(self._elector_task, 10)
        elif self.controller is not None:
            if self.crons is not None:
                await self.crons.stop()
            await self.controller.stop()
        if self.client is not None:
            await self.client.close()
