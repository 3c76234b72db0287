"""The dashboard of `kubetrain dev`: on loopback, acting as the kubeconfig's user (local mode)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable

from kubetrain.dashboard.server import DashboardServer
from kubetrain.dashboard.views.auth import LOCAL
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.dashboard.web import DashboardConfig
from kubetrain.kube.client import KubeClient


@contextlib.asynccontextmanager
async def local_dashboard(
    client: KubeClient, groups: Iterable[str], port: int = 0
) -> AsyncIterator[DashboardServer]:
    """Serve the dashboard on 127.0.0.1:`port` (0: a free port) for the jobs of `groups`."""
    server = DashboardServer(
        client,
        client,
        served_kinds(groups),
        config=DashboardConfig(auth_mode=LOCAL),
        host="127.0.0.1",
        port=port,
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
